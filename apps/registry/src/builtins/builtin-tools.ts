import { DEFAULT_RETURN_CHAR_LIMIT, RUN_CODE_LANGUAGES, type ToolType } from '@toolplane/contracts';
import { createHash } from 'node:crypto';

/**
 * The tools Toolplane provides in every org (../shared/BUILTINS.md): names, parameters, required
 * sets and enums exactly as the reference system's, so an agent built for it finds them.
 *
 * BUILTIN_SCHEMA_VERSION versions the whole set: raise it with any change here, and every org's
 * rows follow on the next deploy (the start-up upgrade and the per-org ensure only ever move a row
 * to a higher version, so replicas of two versions side by side never flip-flop).
 */
export const BUILTIN_SCHEMA_VERSION = 1;

export interface BuiltinTool {
  name: string;
  toolType: Extract<ToolType, 'letta_builtin' | 'letta_core' | 'letta_memory_core'>;
  description: string;
  /** JSON Schema of the parameters (type object). */
  parameters: { type: 'object'; properties: Record<string, unknown>; required: string[] };
  /** The reference's `enable_parallel_execution`: the batch runs these concurrently. */
  parallel: boolean;
}

const str = (description: string) => ({ type: 'string', description });
const int = (description: string) => ({ type: 'integer', description });
const strings = (description: string) => ({ type: 'array', items: { type: 'string' }, description });

export const BUILTIN_TOOLS: readonly BuiltinTool[] = [
  // letta_builtin: run by Toolplane (run_code in the provider runners, the web tools in web-tools).
  {
    name: 'run_code',
    toolType: 'letta_builtin',
    description: 'Run code in a sandbox. Supports Python, Javascript, Typescript, R, and Java.',
    parameters: {
      type: 'object',
      properties: {
        code: str('The code to run.'),
        language: { type: 'string', enum: [...RUN_CODE_LANGUAGES], description: 'The language of the code.' },
      },
      required: ['code', 'language'],
    },
    parallel: true,
  },
  {
    name: 'web_search',
    toolType: 'letta_builtin',
    description: "Search the web using Exa's AI-powered search engine and retrieve relevant content.",
    parameters: {
      type: 'object',
      properties: {
        query: str('The search query to find relevant web content.'),
        // No minimum/maximum: the reference clamps to 1..100 (web-tools does), it does not refuse.
        num_results: { type: 'integer', default: 10, description: 'Number of results to return (1-100).' },
        category: {
          type: 'string',
          enum: [
            'company',
            'research paper',
            'news',
            'pdf',
            'github',
            'tweet',
            'personal site',
            'linkedin profile',
            'financial report',
          ],
          description: 'Focus search on a specific category.',
        },
        include_text: { type: 'boolean', description: 'Whether to include the full page text in the results.' },
        include_domains: strings('List of domains to include in search results.'),
        exclude_domains: strings('List of domains to exclude from search results.'),
        start_published_date: str('Only return content published after this date (ISO format).'),
        end_published_date: str('Only return content published before this date (ISO format).'),
        user_location: str('Two-letter country code for localized results (e.g. "US").'),
      },
      required: ['query'],
    },
    parallel: true,
  },
  {
    name: 'fetch_webpage',
    toolType: 'letta_builtin',
    description:
      'Fetch a webpage and convert it to markdown/text format (Exa contents when an Exa key is set, else a direct fetch with readability extraction).',
    parameters: {
      type: 'object',
      properties: { url: str('The URL of the webpage to fetch and convert.') },
      required: ['url'],
    },
    parallel: true,
  },
  // letta_core / letta_memory_core: their state lives in the agent runtime, which runs them (awaiting_client).
  {
    name: 'send_message',
    toolType: 'letta_core',
    description: 'Sends a message to the human user.',
    parameters: {
      type: 'object',
      properties: { message: str('Message contents. All unicode (including emojis) are supported.') },
      required: ['message'],
    },
    parallel: false,
  },
  {
    name: 'conversation_search',
    toolType: 'letta_core',
    description: 'Search prior conversation history using hybrid search (text + semantic similarity).',
    parameters: {
      type: 'object',
      properties: {
        query: str('String to search for using both text matching and semantic similarity.'),
        roles: {
          type: 'array',
          items: { type: 'string', enum: ['assistant', 'user', 'tool'] },
          description: 'Optional list of message roles to filter by.',
        },
        limit: int('Maximum number of results to return. Uses system default if not specified.'),
        start_date: str(
          "Filter results to messages created on or after this date (INCLUSIVE), ISO 8601 (e.g. '2024-01-15' or '2024-01-15T14:30').",
        ),
        end_date: str(
          "Filter results to messages created on or before this date (INCLUSIVE), ISO 8601 (e.g. '2024-01-20' or '2024-01-20T17:00').",
        ),
      },
      required: [],
    },
    parallel: true,
  },
  {
    name: 'archival_memory_insert',
    toolType: 'letta_core',
    description: 'Add information to long-term archival memory for later retrieval.',
    parameters: {
      type: 'object',
      properties: {
        content: str('Content to write to the memory. All unicode (including emojis) are supported.'),
        tags: strings('Optional list of tags to associate with this memory for better organization and filtering.'),
      },
      required: ['content'],
    },
    parallel: false,
  },
  {
    name: 'archival_memory_search',
    toolType: 'letta_core',
    description: 'Search archival memory using semantic similarity to find relevant information.',
    parameters: {
      type: 'object',
      properties: {
        query: str('What you are looking for, described in natural language.'),
        tags: strings('Optional list of tags to filter search results.'),
        tag_match_mode: {
          type: 'string',
          enum: ['any', 'all'],
          description:
            "How to match tags: 'any' to match passages with any of the tags, 'all' to match only passages with all tags.",
        },
        top_k: int('Maximum number of results to return. Uses system default if not specified.'),
        start_datetime: str('Filter results to passages created on or after this datetime (INCLUSIVE), ISO 8601.'),
        end_datetime: str('Filter results to passages created on or before this datetime (INCLUSIVE), ISO 8601.'),
      },
      required: ['query'],
    },
    parallel: true,
  },
  {
    name: 'core_memory_append',
    toolType: 'letta_memory_core',
    description: 'Append to the contents of core memory.',
    parameters: {
      type: 'object',
      properties: {
        label: str('Section of the memory to be edited.'),
        content: str('Content to write to the memory. All unicode (including emojis) are supported.'),
      },
      required: ['label', 'content'],
    },
    parallel: false,
  },
  {
    name: 'core_memory_replace',
    toolType: 'letta_memory_core',
    description: 'Replace the contents of core memory. To delete memories, use an empty string for new_content.',
    parameters: {
      type: 'object',
      properties: {
        label: str('Section of the memory to be edited.'),
        old_content: str('String to replace. Must be an exact match.'),
        new_content: str('Content to write to the memory. All unicode (including emojis) are supported.'),
      },
      required: ['label', 'old_content', 'new_content'],
    },
    parallel: false,
  },
  {
    name: 'memory_insert',
    toolType: 'letta_memory_core',
    description: 'The memory_insert command allows you to insert text at a specific location in a memory block.',
    parameters: {
      type: 'object',
      properties: {
        label: str('Section of the memory to be edited, identified by its label.'),
        new_string: str('The text to insert. Do not include line number prefixes.'),
        insert_line: {
          type: 'integer',
          default: -1,
          description:
            'The line number after which to insert the text (0 for the beginning of the file). Defaults to -1 (end of the file).',
        },
      },
      required: ['label', 'new_string'],
    },
    parallel: false,
  },
  {
    name: 'memory_replace',
    toolType: 'letta_memory_core',
    description:
      'The memory_replace command allows you to replace a specific string in a memory block with a new string. This is used for making precise edits.',
    parameters: {
      type: 'object',
      properties: {
        label: str('Section of the memory to be edited, identified by its label.'),
        old_string: str('The text to replace (must match exactly, including whitespace and indentation).'),
        new_string: str('The new text to insert in place of the old text. Do not include line number prefixes.'),
      },
      required: ['label', 'old_string', 'new_string'],
    },
    parallel: false,
  },
  {
    name: 'memory_rethink',
    toolType: 'letta_memory_core',
    description:
      'The memory_rethink command allows you to completely rewrite the contents of a memory block. Use this tool to make large sweeping changes (e.g. when you want to condense or reorganize the memory blocks), do NOT use this tool to make small precise edits (e.g. add or remove a line, replace a specific string, etc).',
    parameters: {
      type: 'object',
      properties: {
        label: str('The memory block to be rewritten, identified by its label.'),
        new_memory: str(
          'The new memory contents with information integrated from existing memory blocks and the conversation context.',
        ),
      },
      required: ['label', 'new_memory'],
    },
    parallel: false,
  },
  {
    name: 'memory_finish_edits',
    toolType: 'letta_memory_core',
    description:
      'Call the memory_finish_edits command when you are finished making edits (integrating all new information) into the memory blocks. This function is called when the agent is done rethinking the memory.',
    parameters: { type: 'object', properties: {}, required: [] },
    parallel: false,
  },
];

/** The row a built-in has in every org (what the registry stores; id and org are added per org). */
export function builtinRow(t: BuiltinTool) {
  return {
    name: t.name,
    toolType: t.toolType,
    description: t.description,
    // The reference's: source_type "python", no source (Toolplane runs them itself, or the agent runtime does).
    sourceType: 'python',
    sourceCode: null,
    jsonSchema: { name: t.name, description: t.description, parameters: t.parameters },
    tags: [t.toolType],
    returnCharLimit: DEFAULT_RETURN_CHAR_LIMIT,
    enableParallelExecution: t.parallel,
    defaultRequiresApproval: false,
    metadata: { builtin: { version: BUILTIN_SCHEMA_VERSION } },
  };
}

/** Namespace of built-in ids (a fixed random UUID). */
const NAMESPACE = Buffer.from('5e0f6a1c8b2d4e7f9a3c1d2e4f6a8b0c', 'hex');

/**
 * The built-in's id in this org: `tool-` + a UUIDv5 (RFC 9562) of the org and the name — the same
 * in every replica and every deploy, so no row has to be read to know it and two replicas that
 * create it at once make the same row.
 */
export function builtinToolId(orgId: string, name: string): string {
  const h = createHash('sha1').update(NAMESPACE).update(`${orgId}\u0000${name}`, 'utf8').digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `tool-${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}
