import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Agent tool sets: one row per (org, agent, tool). The foreign key names the org too, so an
 * attachment can only ever point at a tool of its own org; deleting a tool removes its rows (the
 * registry detaches them itself first, to publish the events; the cascade is the backstop).
 */
export class CreateAgentTools1764600000000 implements MigrationInterface {
  name = 'CreateAgentTools1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE registry.tools ADD CONSTRAINT tools_org_id_unique UNIQUE (org_id, id)`);
    await q.query(`
      CREATE TABLE registry.agent_tools (
        seq bigint GENERATED ALWAYS AS IDENTITY,
        org_id text NOT NULL,
        agent_id text NOT NULL CHECK (length(agent_id) BETWEEN 1 AND 128),
        tool_id text NOT NULL,
        -- the agent's own setting; null: the tool's default_requires_approval applies
        requires_approval boolean,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, agent_id, tool_id),
        CONSTRAINT agent_tools_tool_fk FOREIGN KEY (org_id, tool_id) REFERENCES registry.tools (org_id, id) ON DELETE CASCADE
      )`);
    await q.query(`CREATE UNIQUE INDEX agent_tools_agent_seq_idx ON registry.agent_tools (org_id, agent_id, seq)`);
    await q.query(`CREATE INDEX agent_tools_tool_idx ON registry.agent_tools (org_id, tool_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE registry.agent_tools`);
    await q.query(`ALTER TABLE registry.tools DROP CONSTRAINT tools_org_id_unique`);
  }
}
