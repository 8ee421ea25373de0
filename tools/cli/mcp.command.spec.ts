import { progressLine } from './mcp.command';

describe('the live view of an MCP sync', () => {
  const base = {
    event_id: 'e',
    occurred_at: 'now',
    org_id: 'o',
    server_id: 'mcp-00000000-0000-4000-8000-000000000000',
    server_name: 's',
    sync_id: '00000000-0000-4000-8000-000000000000',
    trigger: 'manual' as const,
  };

  it('shows the pages and tools listed so far, then the write with the invalid tools', () => {
    expect(
      progressLine({ ...base, phase: 'listing', pages: 2, listed: 40, errors: 0, invalid: null, write: null }),
    ).toBe('listing  page 2 · 40 tools listed');
    expect(
      progressLine({ ...base, phase: 'listing', pages: 3, listed: 41, errors: 1, invalid: null, write: null }),
    ).toBe('listing  page 3 · 41 tools listed · 1 problem');
    expect(
      progressLine({
        ...base,
        phase: 'writing',
        pages: 3,
        listed: 41,
        errors: 2,
        invalid: 4,
        write: { tools: 40, pages_done: 1, pages: 3 },
      }),
    ).toBe('writing  40 tools (4 invalid) · 1/3 messages · 2 problems');
  });
});
