import { Injectable } from '@nestjs/common';
import type { OrgSecretsResolve, ReplyOf, RequestOf } from '@toolplane/contracts';
import { mergeEnv } from '../env-resolution/env-merge';
import { SecretsService } from '../secrets/secrets.service';

/**
 * Values for other services' `{{VAR}}` templates (mcp-sync): the org's, the agent's and the end
 * user's provider-less secrets, layered by the one precedence of a call's env (ENV_LAYERS: user over
 * agent over org). A request without user_id reads no user's secrets, so one user's value never
 * answers another user's (or an anonymous) request. Nothing is cached here: templates are resolved
 * when a connection is made, not per call.
 */
@Injectable()
export class OrgSecretsService {
  constructor(private readonly secrets: SecretsService) {}

  async resolve(req: RequestOf<typeof OrgSecretsResolve>): Promise<ReplyOf<typeof OrgSecretsResolve>> {
    const layers = await this.secrets.templateValues(req.org_id, req.names, {
      agentId: req.agent_id,
      userId: req.user_id,
    });
    const { env } = mergeEnv(layers);
    const wanted = new Set(req.names);
    const values = Object.fromEntries(Object.entries(env).filter(([k]) => wanted.has(k)));
    return { values, missing: req.names.filter((n) => !Object.hasOwn(values, n)) };
  }
}
