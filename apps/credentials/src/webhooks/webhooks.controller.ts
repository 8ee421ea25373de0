import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { WebhooksDelete, WebhooksGet, WebhooksSet, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { WebhooksService } from './webhooks.service';

@Controller()
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Handles(WebhooksSet)
  set(@Payload() req: RequestOf<typeof WebhooksSet>): Promise<ReplyOf<typeof WebhooksSet>> {
    return this.webhooks.set(req);
  }

  @Handles(WebhooksGet)
  get(@Payload() req: RequestOf<typeof WebhooksGet>): Promise<ReplyOf<typeof WebhooksGet>> {
    return this.webhooks.get(req);
  }

  @Handles(WebhooksDelete)
  delete(@Payload() req: RequestOf<typeof WebhooksDelete>): Promise<ReplyOf<typeof WebhooksDelete>> {
    return this.webhooks.delete(req);
  }
}
