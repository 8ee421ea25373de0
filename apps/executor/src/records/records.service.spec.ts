import { newExecutionId } from './execution-id';
import { argsHashOf, syntheticResult } from './records.service';
import type { ExecutionRow } from './executions.repository';
import { endUser, executionEvent, outcomeEvent, toWireRecord } from './record.mapper';
import { ExecutionApproved, ExecutionFailed, ExecutionRecord } from '@toolplane/contracts';

const row = (over: Partial<ExecutionRow> = {}): ExecutionRow => ({
  execution_id: newExecutionId(),
  org_id: 'acme',
  agent_id: null,
  user_id: null,
  toolset: null,
  tool_id: 'tool-123e4567-e89b-12d3-a456-426614174000',
  tool_name: 'add',
  provider: null,
  status: 'failed',
  mode: 'async',
  created_at: new Date('2026-11-25T10:00:00.000Z'),
  started_at: null,
  finished_at: new Date('2026-11-25T10:00:01.500Z'),
  duration_ms: 1500,
  error_code: 'EXECUTOR_LOST',
  trace_id: 'abc',
  idempotency_key: null,
  batch_id: null,
  call_id: null,
  args_hash: null,
  call_ref: null,
  result_ref: null,
  timeout_ms: null,
  rerun_safe: false,
  claimed_by: null,
  attempts: 1,
  expires_at: new Date('2026-11-26T10:00:00.000Z'),
  queued_at: null,
  ...over,
});

describe('argsHashOf', () => {
  it('is the same for the same tool and args in any key order, and differs otherwise', () => {
    const sut = argsHashOf;
    const tool = 'tool-123e4567-e89b-12d3-a456-426614174000';
    expect(sut(tool, { a: 1, b: { y: [1, 2], x: null } })).toBe(sut(tool, { b: { x: null, y: [1, 2] }, a: 1 }));
    expect(sut(tool, { a: 1 })).not.toBe(sut(tool, { a: 2 }));
    expect(sut(tool, { a: [1, 2] })).not.toBe(sut(tool, { a: [2, 1] }));
    expect(sut(tool, { a: '1' })).not.toBe(sut(tool, { a: 1 }));
    expect(sut(tool, {})).not.toBe(sut('tool-00000000-0000-4000-8000-000000000000', {}));
  });
});

describe('execution records on the wire', () => {
  it('makes the result of an outcome Toolplane decided, named by its code', () => {
    const sut = syntheticResult(row());
    expect(sut).toMatchObject({
      status: 'error',
      func_return: expect.stringContaining('not run again'),
      error: { code: 'EXECUTOR_LOST' },
      duration_ms: 1500,
      trace_id: 'abc',
    });
  });

  it('maps a row to the ExecutionRecord contract (expires_at only while pending)', () => {
    const sut = toWireRecord(row());
    expect(ExecutionRecord.parse(sut)).toEqual(sut);
    expect(sut).toMatchObject({
      status: 'failed',
      expires_at: null,
      created_at: '2026-11-25T10:00:00.000Z',
      duration_ms: 1500,
    });
    expect(toWireRecord(row({ status: 'pending_approval' })).expires_at).toBe('2026-11-26T10:00:00.000Z');
  });

  it("carries the record's end user on the wire record and in its events (null when it named none)", () => {
    const mine = row({ user_id: 'user-42' });
    expect(toWireRecord(mine).user_id).toBe('user-42');
    expect(toWireRecord(row()).user_id).toBeNull();
    const failed = outcomeEvent(mine);
    expect(failed.descriptor).toBe(ExecutionFailed);
    expect(ExecutionFailed.payload.parse(failed.payload)).toMatchObject({
      execution_id: mine.execution_id,
      user_id: 'user-42',
    });
    const approved = executionEvent('approved', row({ status: 'running' }), { args_corrected: false });
    expect(ExecutionApproved.payload.parse(approved.payload).user_id).toBeNull();
  });

  it('carries the tool set a call was made through on the wire record and in its events (null when none)', () => {
    const through = row({ toolset: 'support' });
    expect(toWireRecord(through).toolset).toBe('support');
    expect(toWireRecord(row()).toolset).toBeNull();
    expect(ExecutionFailed.payload.parse(outcomeEvent(through).payload)).toMatchObject({
      execution_id: through.execution_id,
      toolset: 'support',
    });
    expect(
      ExecutionApproved.payload.parse(
        executionEvent('approved', row({ status: 'running' }), { args_corrected: false }).payload,
      ).toolset,
    ).toBeNull();
  });

  it('names the end user on a span as enduser.id, and nothing when there is none', () => {
    expect(endUser('user-42')).toEqual({ 'enduser.id': 'user-42' });
    expect(endUser(null)).toEqual({});
    expect(endUser(undefined)).toEqual({});
  });
});
