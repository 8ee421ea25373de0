// Validates Kubernetes objects offline against the API schemas shipped by `kubernetes-models`
// (an ESM-only package, hence this separate script run with `node`, not through jest).
// stdin: JSON [{ where, object }]. stdout: JSON [{ where, errors: string[] }].
// Besides the schema (types, enums, required fields), it rejects unknown fields, as
// `kubectl apply --validate=strict` does: the compiled schemas accept any extra key, so each key
// is probed with values of every JSON type; a key on which no probe makes the schema complain is
// not in the schema.
import { readFileSync } from 'node:fs';

const input = JSON.parse(readFileSync(0, 'utf8'));

/** `apps/v1` + `Deployment` -> the model class from `kubernetes-models/apps/v1/Deployment`. */
async function modelFor(apiVersion, kind) {
  if (
    typeof apiVersion !== 'string' ||
    typeof kind !== 'string' ||
    !/^[A-Za-z0-9.]+(\/[a-z0-9]+)?$/.test(apiVersion) ||
    !/^[A-Za-z]+$/.test(kind)
  ) {
    return undefined;
  }
  try {
    const mod = await import(`kubernetes-models/${apiVersion}/${kind}`);
    return mod[kind];
  } catch {
    return undefined;
  }
}

function errorsOf(Model, object) {
  try {
    new Model(object).validate();
    return [];
  } catch (e) {
    if (!Array.isArray(e.errors)) throw e;
    return e.errors;
  }
}

const pointer = (path) => path.map((p) => '/' + String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('');

function withValue(object, path, value) {
  const copy = structuredClone(object);
  let node = copy;
  for (const p of path.slice(0, -1)) node = node[p];
  node[path[path.length - 1]] = value;
  return copy;
}

const PROBES = [true, 0.5, 'probe', [], { probe: true }];

function isKnown(Model, object, path) {
  const at = pointer(path);
  return PROBES.some((probe) =>
    errorsOf(Model, withValue(object, path, probe)).some(
      (e) => e.instancePath === at || e.instancePath.startsWith(at + '/'),
    ),
  );
}

function unknownFields(Model, object) {
  const found = [];
  const walk = (node, path) => {
    if (Array.isArray(node)) node.forEach((v, i) => walk(v, [...path, i]));
    else if (node && typeof node === 'object') {
      for (const key of Object.keys(node)) {
        const p = [...path, key];
        if (p.length === 1 && (key === 'apiVersion' || key === 'kind')) continue;
        if (isKnown(Model, object, p)) walk(node[key], p);
        else found.push(`${pointer(p)}: unknown field "${key}"`);
      }
    }
  };
  walk(object, []);
  return found;
}

const out = [];
for (const { where, object } of input) {
  const Model = await modelFor(object?.apiVersion, object?.kind);
  if (!Model) {
    out.push({ where, errors: [`no Kubernetes schema for apiVersion=${object?.apiVersion} kind=${object?.kind}`] });
    continue;
  }
  const schemaErrors = errorsOf(Model, object).map(
    (e) => `${e.instancePath || '/'} ${e.message}${e.params ? ' ' + JSON.stringify(e.params) : ''}`,
  );
  out.push({ where, errors: [...schemaErrors, ...unknownFields(Model, object)] });
}
process.stdout.write(JSON.stringify(out));
