import { AgentToolsList, AGENT_TOOL_EVENTS } from './agents.contract';
import { AuthChanged, OrgDeleted } from './auth.contract';
import { CredentialsChanged } from './credentials.contract';
import type { EventDescriptor, RequestDescriptor } from './descriptor';
import { E2bRunAbandoned, LocalRunAbandoned, ModalRunAbandoned, ToolsExecute } from './execute.contract';
import {
  EXECUTION_EVENTS,
  ExecutionRecordWanted,
  ExecutionsApprove,
  ExecutionsDeny,
  ExecutionsGet,
  ExecutionsList,
} from './executions.contract';
import { McpSessionClosed, McpSessionRelayed } from './gateway.contract';
import { APP_NAMES, type AppName } from './identity';
import { ConnectionAuthorized, ConnectionRevoked, MCP_SERVER_EVENTS } from './mcp.contract';
import { REQUEST_CANCELS } from './requests.contract';
import { SchemasGenerate, SchemasStrictify } from './schemas.contract';
import { TOOL_EVENTS, ToolDeleted, ToolUpdated, ToolsGet } from './tools.contract';
import { TOOLSET_EVENTS, ToolsetsGet, ToolsetsToolsList } from './toolsets.contract';

/**
 * Who sends what on the bus, where a descriptor does not say it: an internal request names its
 * `callers` and an event its `publishedBy`, but a public request names only the scope a token needs
 * (any agent runtime may send it), and no event names its subscribers. The NATS user of each app
 * (tools/deploy/nats-config.ts) may publish only the requests it makes and subscribe only to the
 * events it reads, so both are written here, once, and checked against the apps' code by
 * tools/deploy/app-traffic.spec.ts (a `.request(<Descriptor>` in apps/<app>/src that is not listed,
 * or a listed one the code never makes, fails it).
 */

/** The public requests each app sends itself (on its own behalf or on a caller's, as the MCP gateway does). */
export const PUBLIC_REQUESTS_SENT: { readonly [A in AppName]: readonly RequestDescriptor[] } = {
  registry: [SchemasGenerate, SchemasStrictify],
  schema: [],
  credentials: [],
  // The tool catalog (tools.get) and the approval policy's tool sets (agent tools, tool sets).
  executor: [ToolsGet, AgentToolsList, ToolsetsToolsList],
  'runner-local': [],
  'runner-e2b': [],
  'runner-modal': [],
  'mcp-sync': [],
  'web-tools': [],
  // The HTTP edge: MCP's tools/list, tools/call and tasks, sent on as the public subjects.
  'mcp-gateway': [
    AgentToolsList,
    ToolsetsGet,
    ToolsetsToolsList,
    ToolsExecute,
    ExecutionsGet,
    ExecutionsList,
    ExecutionsApprove,
    ExecutionsDeny,
  ],
};

/** Events every app reads (libs/platform's runService: the token verifier's hint). */
export const EVENTS_READ_BY_EVERY_APP: readonly EventDescriptor[] = [AuthChanged];

/**
 * The unsealed events each app subscribes to (MessagingClient.onEvents), besides
 * EVENTS_READ_BY_EVERY_APP. Sealed broadcasts are read by their `sealed.to` and need no entry.
 */
export const EVENTS_READ: { readonly [A in AppName]: readonly EventDescriptor[] } = {
  // The agent tool definitions cache.
  registry: [ToolUpdated, ToolDeleted, ...AGENT_TOOL_EVENTS],
  schema: [],
  // Its cache, dropped on every replica.
  credentials: [CredentialsChanged],
  // Caches (tool catalog, approval policy, env replies), environments prepared on tool events, outcome waits.
  executor: [...TOOL_EVENTS, ...AGENT_TOOL_EVENTS, ...TOOLSET_EVENTS, ...EXECUTION_EVENTS, CredentialsChanged],
  'runner-local': [],
  'runner-e2b': [],
  'runner-modal': [],
  // Sessions dropped with their org, server caches, a revoked account's connections.
  'mcp-sync': [OrgDeleted, ...MCP_SERVER_EVENTS, ConnectionRevoked],
  'web-tools': [],
  // The endpoints' tool lists, and calls waiting for an account to be connected.
  'mcp-gateway': [...TOOL_EVENTS, ...AGENT_TOOL_EVENTS, ...TOOLSET_EVENTS, ...MCP_SERVER_EVENTS, ConnectionAuthorized],
};

/** Every internal broadcast (`toolplane.internal.v1.events.*`): core NATS, never in a stream. */
export const INTERNAL_EVENTS: readonly EventDescriptor[] = [
  AuthChanged,
  OrgDeleted,
  CredentialsChanged,
  McpSessionRelayed,
  McpSessionClosed,
  ExecutionRecordWanted,
  LocalRunAbandoned,
  E2bRunAbandoned,
  ModalRunAbandoned,
  ...APP_NAMES.map((a) => REQUEST_CANCELS[a]),
];
