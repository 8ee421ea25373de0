#!/usr/bin/env bash
# The one install step of a fresh machine, shared by `npm start` (tools/dev/start.ts) and CI
# (.ci/run): finds or installs the system packages Toolplane needs.
#
#   tools/dev/prerequisites.sh            what runner-local needs: bubblewrap (the sandbox),
#                                         slirp4netns (network-enabled tools, package indexes),
#                                         python3 with venv and pip (tools, pip requirements)
#   tools/dev/prerequisites.sh --services also NATS and PostgreSQL (CI runs against real ones)
#   tools/dev/prerequisites.sh --check    only report what is missing (exit 1 if anything is)
#
# Missing packages are installed with apt-get when this runs as root on a Debian/Ubuntu machine,
# saying so first; otherwise it prints the command to run and exits 1.
set -euo pipefail

services=false
check=false
for arg in "$@"; do
  case "$arg" in
    --services) services=true ;;
    --check) check=true ;;
    *) echo "usage: $0 [--services] [--check]" >&2; exit 2 ;;
  esac
done

say() { printf '[prerequisites] %s\n' "$*"; }

need=()
why=()
want() { need+=("$1"); why+=("$1 ($2)"); }

[ -x /usr/bin/bwrap ] || want bubblewrap "the sandbox of runner-local"
[ -x /usr/bin/slirp4netns ] || want slirp4netns "network-enabled tools and package indexes"
[ -x /usr/bin/python3 ] || want python3 "runs Python tools"
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || want python3-venv "virtualenvs for pip requirements"
  /usr/bin/python3 -m pip --version >/dev/null 2>&1 || want python3-pip "installs pip requirements"
fi
if $services; then
  [ -x /usr/sbin/nats-server ] || command -v nats-server >/dev/null 2>&1 || want nats-server "the message bus"
  command -v pg_ctlcluster >/dev/null 2>&1 || want postgresql "the database"
  command -v pg_isready >/dev/null 2>&1 || want postgresql-client "pg_isready"
fi

if [ ${#need[@]} -eq 0 ]; then
  say "all present"
  exit 0
fi

if $check; then
  say "missing: ${why[*]}"
  exit 1
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  say "installing with apt-get: ${why[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  say "installed ${need[*]}"
  exit 0
fi

say "missing: ${why[*]}"
say "install them with: sudo apt-get install -y ${need[*]}"
say "(runner-local refuses to start without bubblewrap; RUNNER_ISOLATION=unsafe runs tools without any isolation)"
exit 1
