/**
 * Modal's gRPC service definitions, taken from the pinned `modal` SDK itself: the package ships
 * the ts-proto output of Modal's `api.proto` (`modal.client.ModalClient`) and
 * `task_command_router.proto` (`modal.task_command_router.TaskCommandRouter`) inside its bundle
 * but does not export them. The fake evaluates the SDK's CommonJS bundle once, with its own
 * dependencies, and keeps the two definitions: the fake and the SDK encode and decode every
 * message with the very same code, so a field the SDK sends is a field the fake reads.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';

/** A method of a ts-proto service definition (what nice-grpc serves). */
export interface ProtoMethod {
  name: string;
  requestStream: boolean;
  responseStream: boolean;
  requestType: { fromPartial(o: unknown): unknown };
  responseType: { fromPartial(o: unknown): unknown };
}

export interface ServiceDefinition {
  name: string;
  fullName: string;
  methods: Record<string, ProtoMethod>;
}

export interface ModalProtocol {
  /** `modal.client.ModalClient`: the control plane at MODAL_SERVER_URL. */
  ModalClientDefinition: ServiceDefinition;
  /** `modal.task_command_router.TaskCommandRouter`: a task's exec and stdio service. */
  TaskCommandRouterDefinition: ServiceDefinition;
  /** The SDK version whose definitions these are. */
  version: string;
}

let loaded: ModalProtocol | undefined;

export function modalProtocol(): ModalProtocol {
  if (loaded) return loaded;
  const bundle = require.resolve('modal'); // the "require" export: dist/index.cjs
  const pkg = JSON.parse(readFileSync(path.join(path.dirname(bundle), '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  const requireFromSdk = createRequire(bundle);
  const source = `${readFileSync(bundle, 'utf8')}\n;module.exports.__definitions = { ModalClientDefinition, TaskCommandRouterDefinition };`;
  const mod: { exports: Record<string, unknown> } = { exports: {} };
  new Function('exports', 'require', 'module', '__filename', '__dirname', source)(
    mod.exports,
    requireFromSdk,
    mod,
    bundle,
    path.dirname(bundle),
  );
  const defs = mod.exports.__definitions as Omit<ModalProtocol, 'version'>;
  loaded = { ...defs, version: pkg.version };
  return loaded;
}
