import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  AgentToolsAttach,
  AgentToolsDefinitions,
  AgentToolsDetach,
  AgentToolsList,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { AgentToolsService } from './agent-tools.service';
import { ToolDefinitionsService } from './tool-definitions.service';

@Controller()
export class AgentsController {
  constructor(
    private readonly agentTools: AgentToolsService,
    private readonly toolDefinitions: ToolDefinitionsService,
  ) {}

  @Handles(AgentToolsAttach)
  attach(@Payload() req: RequestOf<typeof AgentToolsAttach>): Promise<ReplyOf<typeof AgentToolsAttach>> {
    return this.agentTools.attach(req);
  }

  @Handles(AgentToolsDetach)
  detach(@Payload() req: RequestOf<typeof AgentToolsDetach>): Promise<ReplyOf<typeof AgentToolsDetach>> {
    return this.agentTools.detach(req);
  }

  @Handles(AgentToolsList)
  list(@Payload() req: RequestOf<typeof AgentToolsList>): Promise<ReplyOf<typeof AgentToolsList>> {
    return this.agentTools.list(req);
  }

  @Handles(AgentToolsDefinitions)
  definitions(@Payload() req: RequestOf<typeof AgentToolsDefinitions>): Promise<ReplyOf<typeof AgentToolsDefinitions>> {
    return this.toolDefinitions.definitions(req);
  }
}
