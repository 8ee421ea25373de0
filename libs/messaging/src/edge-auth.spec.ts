import {
  AuthTokensList,
  ExecutionsList,
  SecretsSet,
  ToolsExecute,
  ToolsExecuteBatch,
  ToolsGet,
  type Principal,
} from '@toolplane/contracts';
import { EdgeAuth, requestTakesUserId } from './edge-auth';

const tenant = (userId?: string): Principal => ({
  kind: 'tenant',
  org: 'acme',
  scopes: new Set(['tools:execute']),
  tokenId: 'tok-1',
  ...(userId ? { userId } : {}),
});

describe('EdgeAuth.bindEndUser (a token bound to an end user acts as that user)', () => {
  it('knows which requests take a user_id, through refinements', () => {
    expect(
      [ToolsExecute, ToolsExecuteBatch, ExecutionsList, SecretsSet].map((d) => requestTakesUserId(d.request)),
    ).toEqual([true, true, true, true]);
    expect([ToolsGet, AuthTokensList].map((d) => requestTakesUserId(d.request))).toEqual([false, false]);
  });

  it("fills in the token's user where the request names none, before the contract is read", () => {
    const sut = { org_id: 'acme', tool_name: 'x' } as Record<string, unknown>;
    EdgeAuth.bindEndUser(tenant('alice'), ToolsExecute, sut);
    expect(sut.user_id).toBe('alice');
    expect(ToolsExecute.request.parse(sut).user_id).toBe('alice');
  });

  it('refuses another user_id with FORBIDDEN naming the bound user, and takes its own (as the contract trims it)', () => {
    expect(() => EdgeAuth.bindEndUser(tenant('alice'), ToolsExecute, { org_id: 'acme', user_id: 'bob' })).toThrow(
      expect.objectContaining({ code: 'FORBIDDEN', message: expect.stringContaining('bound to end user alice') }),
    );
    expect(() => EdgeAuth.bindEndUser(tenant('alice'), ToolsExecute, { org_id: 'acme', user_id: 42 })).toThrow(
      expect.objectContaining({ code: 'FORBIDDEN' }),
    );
    const own = { org_id: 'acme', user_id: ' alice ' };
    EdgeAuth.bindEndUser(tenant('alice'), ToolsExecute, own);
    expect(own.user_id).toBe(' alice ');
  });

  it('leaves unbound tokens, services, operators and requests without a user_id field alone', () => {
    for (const p of [
      tenant(),
      { kind: 'service', app: 'mcp-gateway' } as Principal,
      { kind: 'operator', tokenId: 't' } as Principal,
    ]) {
      const body = { org_id: 'acme', user_id: 'bob' };
      EdgeAuth.bindEndUser(p, ToolsExecute, body);
      expect(body.user_id).toBe('bob');
    }
    const get = { org_id: 'acme', name: 'x' } as Record<string, unknown>;
    EdgeAuth.bindEndUser(tenant('alice'), ToolsGet, get);
    expect(get).not.toHaveProperty('user_id');
  });
});
