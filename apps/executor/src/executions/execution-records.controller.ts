import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  ExecutionsApprove,
  ExecutionsDeny,
  ExecutionsGet,
  ExecutionsList,
  ExecutionsSubmitResult,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { ApprovalsService } from './approvals.service';
import { ClientResultsService } from './client-results.service';
import { ExecutionQueries } from './execution-queries.service';

/** toolplane.v1.executions.*: reading records, approving or denying held calls, client-side results. */
@Controller()
export class ExecutionRecordsController {
  constructor(
    private readonly queries: ExecutionQueries,
    private readonly approvals: ApprovalsService,
    private readonly clientResults: ClientResultsService,
  ) {}

  @Handles(ExecutionsGet)
  get(@Payload() req: RequestOf<typeof ExecutionsGet>): Promise<ReplyOf<typeof ExecutionsGet>> {
    return this.queries.get(req);
  }

  @Handles(ExecutionsList)
  list(@Payload() req: RequestOf<typeof ExecutionsList>): Promise<ReplyOf<typeof ExecutionsList>> {
    return this.queries.list(req);
  }

  @Handles(ExecutionsApprove)
  approve(@Payload() req: RequestOf<typeof ExecutionsApprove>): Promise<ReplyOf<typeof ExecutionsApprove>> {
    return this.approvals.approve(req);
  }

  @Handles(ExecutionsDeny)
  deny(@Payload() req: RequestOf<typeof ExecutionsDeny>): Promise<ReplyOf<typeof ExecutionsDeny>> {
    return this.approvals.deny(req);
  }

  @Handles(ExecutionsSubmitResult)
  submitResult(
    @Payload() req: RequestOf<typeof ExecutionsSubmitResult>,
  ): Promise<ReplyOf<typeof ExecutionsSubmitResult>> {
    return this.clientResults.submit(req);
  }
}
