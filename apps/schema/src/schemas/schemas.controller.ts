import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  SchemasGenerate,
  SchemasNormalize,
  SchemasStrictify,
  SchemasValidate,
  type Principal,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { Caller, Handles } from '@toolplane/messaging';
import { orgOf, SchemasService } from './schemas.service';

@Controller()
export class SchemasController {
  constructor(private readonly schemas: SchemasService) {}

  @Handles(SchemasGenerate)
  generate(
    @Payload() req: RequestOf<typeof SchemasGenerate>,
    @Caller() caller: Principal,
  ): Promise<ReplyOf<typeof SchemasGenerate>> {
    return this.schemas.generate(orgOf(caller, req.org_id), req);
  }

  @Handles(SchemasValidate)
  validate(
    @Payload() req: RequestOf<typeof SchemasValidate>,
    @Caller() caller: Principal,
  ): Promise<ReplyOf<typeof SchemasValidate>> {
    return this.schemas.validate(orgOf(caller, req.org_id), req.json_schema);
  }

  @Handles(SchemasStrictify)
  strictify(
    @Payload() req: RequestOf<typeof SchemasStrictify>,
    @Caller() caller: Principal,
  ): Promise<ReplyOf<typeof SchemasStrictify>> {
    return this.schemas.strictify(orgOf(caller, req.org_id), req.json_schema);
  }

  @Handles(SchemasNormalize)
  normalize(
    @Payload() req: RequestOf<typeof SchemasNormalize>,
    @Caller() caller: Principal,
  ): Promise<ReplyOf<typeof SchemasNormalize>> {
    return this.schemas.normalize(orgOf(caller, req.org_id), req.json_schema);
  }
}
