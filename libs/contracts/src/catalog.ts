import type { EventDescriptor, RequestDescriptor } from './descriptor';
import { LocalRunnerRun, ToolsExecute } from './execute.contract';
import { SchemasGenerate, SchemasValidate } from './schemas.contract';
import { ToolCreated, ToolDeleted, ToolsDelete, ToolsGet, ToolsList, ToolsUpsert, ToolUpdated } from './tools.contract';

/** Every request subject, public and internal. */
export const REQUESTS: readonly RequestDescriptor[] = [
  ToolsUpsert,
  ToolsGet,
  ToolsList,
  ToolsDelete,
  SchemasGenerate,
  SchemasValidate,
  ToolsExecute,
  LocalRunnerRun,
];

export const EVENTS: readonly EventDescriptor[] = [ToolCreated, ToolUpdated, ToolDeleted];

const bySubject = new Map(REQUESTS.map((d) => [d.subject, d]));

export function requestDescriptorFor(subject: string): RequestDescriptor | undefined {
  return bySubject.get(subject);
}
