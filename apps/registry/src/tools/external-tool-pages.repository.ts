import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { ExternalToolInput } from '@toolplane/contracts';
import type { DataSource } from 'typeorm';

/** Staged pages expire after this: a sync that never commits leaves nothing for long. */
const STAGED_TTL = '1 hour';

export interface PageRef {
  orgId: string;
  sourceId: string;
  syncId: string;
}

@Injectable()
export class ExternalToolPagesRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /** Stores (or replaces: a retried page) one page, and drops expired pages. */
  async stage(ref: PageRef, page: number, tools: ExternalToolInput[]): Promise<void> {
    await this.ds.query(`DELETE FROM registry.external_tool_pages WHERE created_at < now() - interval '${STAGED_TTL}'`);
    await this.ds.query(
      `INSERT INTO registry.external_tool_pages (sync_id, page, org_id, source_id, tools) VALUES ($1, $2, $3, $4, $5::jsonb)
       ON CONFLICT (sync_id, page) DO UPDATE SET tools = EXCLUDED.tools, created_at = now()
       WHERE registry.external_tool_pages.org_id = EXCLUDED.org_id AND registry.external_tool_pages.source_id = EXCLUDED.source_id`,
      [ref.syncId, page, ref.orgId, ref.sourceId, JSON.stringify(tools)],
    );
  }

  /** The staged pages of this org's source and sync, in page order. */
  async load(ref: PageRef): Promise<Array<{ page: number; tools: ExternalToolInput[] }>> {
    const rows: Array<{ page: number; tools: ExternalToolInput[] }> = await this.ds.query(
      `SELECT page, tools FROM registry.external_tool_pages WHERE sync_id = $1 AND org_id = $2 AND source_id = $3 ORDER BY page`,
      [ref.syncId, ref.orgId, ref.sourceId],
    );
    return rows;
  }

  async drop(ref: PageRef): Promise<void> {
    await this.ds.query(`DELETE FROM registry.external_tool_pages WHERE sync_id = $1 AND org_id = $2`, [
      ref.syncId,
      ref.orgId,
    ]);
  }
}
