import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { SchemasGenerate, SchemasNormalize, SchemasStrictify, SchemasValidate, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { SchemasService } from './schemas.service';

@Controller()
export class SchemasController {
  constructor(private readonly schemas: SchemasService) {}

  @Handles(SchemasGenerate)
  generate(@Payload() req: RequestOf<typeof SchemasGenerate>): Promise<ReplyOf<typeof SchemasGenerate>> {
    return this.schemas.generate(req);
  }

  @Handles(SchemasValidate)
  validate(@Payload() req: RequestOf<typeof SchemasValidate>): Promise<ReplyOf<typeof SchemasValidate>> {
    return this.schemas.validate(req.json_schema);
  }

  @Handles(SchemasStrictify)
  strictify(@Payload() req: RequestOf<typeof SchemasStrictify>): Promise<ReplyOf<typeof SchemasStrictify>> {
    return this.schemas.strictify(req.json_schema);
  }

  @Handles(SchemasNormalize)
  normalize(@Payload() req: RequestOf<typeof SchemasNormalize>): Promise<ReplyOf<typeof SchemasNormalize>> {
    return this.schemas.normalize(req.json_schema);
  }
}
