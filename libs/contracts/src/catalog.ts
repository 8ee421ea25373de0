import { AgentToolsAttach, AgentToolsAttached, AgentToolsDefinitions, AgentToolsDetach, AgentToolsDetached, AgentToolsList } from './agents.contract';
import { AuthOrgsDelete, AuthStateGet, AuthTokensCreate, AuthTokensList, AuthTokensRevoke } from './auth.contract';
import {
  ExecutionEnvResolve,
  McpOAuthTokensDelete,
  McpOAuthTokensFetch,
  McpOAuthTokensList,
  McpOAuthTokensStore,
  OrgSecretsResolve,
  SealedValuesOpen,
  SealedValuesSeal,
  SandboxConfigsGet,
  SandboxConfigsList,
  SandboxConfigsUpsert,
  SecretsDelete,
  SecretsList,
  SecretsSet,
  WebhooksDelete,
  WebhooksGet,
  WebhooksSet,
} from './credentials.contract';
import type { EventDescriptor, RequestDescriptor, WorkQueueDescriptor } from './descriptor';
import { EXECUTION_EVENTS, ExecutionsApprove, ExecutionsDeny, ExecutionsGet, ExecutionsList, ExecutionsSubmitResult, ExecutionWork } from './executions.contract';
import { E2bRunnerEnvironment, E2bRunnerRun, LocalRunnerEnvironment, ModalRunnerEnvironment, ModalRunnerRun, LocalRunnerRun, ToolsEnvironment, ToolsExecute, ToolsExecuteBatch } from './execute.contract';
import {
  CONNECTION_EVENTS,
  ConnectionsGet,
  ConnectionsList,
  ConnectionsRevoke,
  ExternalToolsStage,
  ExternalToolsSync,
  McpServerRemoved,
  McpServersAdd,
  McpServersGet,
  McpServersList,
  McpServersRemove,
  McpServersSync,
  McpServersUpdate,
  McpServerSynced,
  McpServerProgressed,
  McpOAuthComplete,
  McpToolsCall,
} from './mcp.contract';
import { SchemasGenerate, SchemasNormalize, SchemasStrictify, SchemasValidate } from './schemas.contract';
import { ToolCreated, ToolDeleted, ToolsDelete, ToolsGet, ToolsList, ToolsUpsert, ToolUpdated } from './tools.contract';
import { ToolsetDeleted, ToolsetsDelete, ToolsetsGet, ToolsetsList, ToolsetsToolsList, ToolsetsUpsert, ToolsetUpserted } from './toolsets.contract';
import { WebFetchWebpage, WebSearch } from './web.contract';

/** Every request subject, public and internal. */
export const REQUESTS: readonly RequestDescriptor[] = [
  ToolsUpsert,
  ToolsGet,
  ToolsList,
  ToolsDelete,
  AgentToolsAttach,
  AgentToolsDetach,
  AgentToolsList,
  AgentToolsDefinitions,
  ToolsetsUpsert,
  ToolsetsGet,
  ToolsetsList,
  ToolsetsDelete,
  ToolsetsToolsList,
  SchemasGenerate,
  SchemasValidate,
  SchemasStrictify,
  SchemasNormalize,
  ToolsExecute,
  ToolsExecuteBatch,
  ExecutionsGet,
  ExecutionsList,
  ExecutionsApprove,
  ExecutionsDeny,
  ExecutionsSubmitResult,
  ToolsEnvironment,
  LocalRunnerRun,
  LocalRunnerEnvironment,
  E2bRunnerRun,
  E2bRunnerEnvironment,
  ModalRunnerRun,
  ModalRunnerEnvironment,
  SecretsSet,
  SecretsList,
  SecretsDelete,
  WebhooksSet,
  WebhooksGet,
  WebhooksDelete,
  SandboxConfigsUpsert,
  SandboxConfigsGet,
  SandboxConfigsList,
  ExecutionEnvResolve,
  OrgSecretsResolve,
  McpOAuthTokensStore,
  McpOAuthTokensFetch,
  McpOAuthTokensDelete,
  McpOAuthTokensList,
  SealedValuesSeal,
  SealedValuesOpen,
  McpServersAdd,
  McpServersGet,
  McpServersList,
  McpServersUpdate,
  McpServersRemove,
  McpServersSync,
  McpOAuthComplete,
  McpToolsCall,
  ConnectionsList,
  ConnectionsGet,
  ConnectionsRevoke,
  ExternalToolsStage,
  ExternalToolsSync,
  AuthTokensCreate,
  AuthTokensList,
  AuthTokensRevoke,
  AuthOrgsDelete,
  AuthStateGet,
  WebFetchWebpage,
  WebSearch,
];

export const EVENTS: readonly EventDescriptor[] = [ToolCreated, ToolUpdated, ToolDeleted, AgentToolsAttached, AgentToolsDetached, ToolsetUpserted, ToolsetDeleted, McpServerSynced, McpServerProgressed, McpServerRemoved, ...CONNECTION_EVENTS, ...EXECUTION_EVENTS];

/** Every JetStream work queue. */
export const WORK_QUEUES: readonly WorkQueueDescriptor[] = [ExecutionWork];

const bySubject = new Map(REQUESTS.map((d) => [d.subject, d]));

export function requestDescriptorFor(subject: string): RequestDescriptor | undefined {
  return bySubject.get(subject);
}
