import { main } from '@toolplane/platform';
import { GatewayModule } from './gateway.module';
import { loadGatewayConfig } from './mcp-gateway.config';

main(() => {
  const config = loadGatewayConfig();
  return {
    name: 'mcp-gateway',
    config,
    module: GatewayModule,
    http: { host: config.GATEWAY_HOST, port: config.GATEWAY_PORT },
  };
});
