import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { SchemasGenerate, SchemasValidate, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { SchemasService } from './schemas.service';

@Controller()
export class SchemasController {
  constructor(private readonly schemas: SchemasService) {}

  @Handles(SchemasGenerate)
  generate(@Payload() req: RequestOf<typeof SchemasGenerate>): ReplyOf<typeof SchemasGenerate> {
    return this.schemas.generate(req);
  }

  @Handles(SchemasValidate)
  validate(@Payload() req: RequestOf<typeof SchemasValidate>): ReplyOf<typeof SchemasValidate> {
    return this.schemas.validate(req.json_schema);
  }
}
