import { SecretsService, type SecretValue } from '../secrets/secrets.service';
import { OrgSecretsService } from './org-secrets.service';

const vars = (o: Record<string, string>) =>
  new Map<string, SecretValue>(Object.entries(o).map(([k, value]) => [k, { value, mask: true }]));

describe('OrgSecretsService (templates: user over agent over org)', () => {
  const stored = {
    sandbox: { A: 'org', B: 'org', C: 'org' },
    agent: { 'agent-1': { B: 'agent', C: 'agent' } },
    user: { alice: { C: 'alice' } },
  } as const;
  const asked: Array<{ agentId?: string; userId?: string }> = [];
  const secrets = {
    templateValues: async (_org: string, _names: string[], who: { agentId?: string; userId?: string }) => {
      asked.push(who);
      return {
        sandbox: vars(stored.sandbox),
        agent: vars(who.agentId ? ((stored.agent as Record<string, Record<string, string>>)[who.agentId] ?? {}) : {}),
        user: vars(who.userId ? ((stored.user as Record<string, Record<string, string>>)[who.userId] ?? {}) : {}),
      };
    },
  } as unknown as SecretsService;
  const sut = new OrgSecretsService(secrets);

  it('layers the same way as a call env, and names what none of them has', async () => {
    expect(
      await sut.resolve({ org_id: 'o', agent_id: 'agent-1', user_id: 'alice', names: ['A', 'B', 'C', 'Z'] }),
    ).toEqual({ values: { A: 'org', B: 'agent', C: 'alice' }, missing: ['Z'] });
    expect(await sut.resolve({ org_id: 'o', user_id: 'bob', names: ['C'] })).toEqual({
      values: { C: 'org' },
      missing: [],
    });
    expect(await sut.resolve({ org_id: 'o', names: ['C'] })).toEqual({ values: { C: 'org' }, missing: [] });
    expect(asked.at(-1)).toEqual({ agentId: undefined, userId: undefined });
  });
});
