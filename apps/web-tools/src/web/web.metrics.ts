import { Injectable } from '@nestjs/common';
import { ToolplaneError } from '@toolplane/contracts';
import { HealthRegistry, Histogram } from '@toolplane/platform';

const BOUNDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
type Tool = 'fetch_webpage' | 'web_search';

/** web-tools' /metrics (Prometheus text): calls by tool and outcome, and their durations. */
@Injectable()
export class WebMetrics {
  private readonly calls = new Map<string, number>();
  private readonly durations: Record<Tool, Histogram> = {
    fetch_webpage: new Histogram(BOUNDS),
    web_search: new Histogram(BOUNDS),
  };

  constructor(health: HealthRegistry) {
    health.metrics = () => this.render();
  }

  /** Runs one call, counting it under its outcome (`ok` or its error code). */
  async time<T>(tool: Tool, call: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    let outcome = 'ok';
    try {
      return await call();
    } catch (e) {
      outcome = e instanceof ToolplaneError ? e.code : 'INTERNAL';
      throw e;
    } finally {
      this.durations[tool].observe((performance.now() - t0) / 1000);
      const k = `tool="${tool}",outcome="${outcome}"`;
      this.calls.set(k, (this.calls.get(k) ?? 0) + 1);
    }
  }

  render(): string {
    const out = [
      '# HELP toolplane_web_tool_calls_total Web built-in calls, by tool and outcome (ok or the error code).',
      '# TYPE toolplane_web_tool_calls_total counter',
    ];
    for (const [k, n] of this.calls) out.push(`toolplane_web_tool_calls_total{${k}} ${n}`);
    out.push(
      '# HELP toolplane_web_tool_duration_seconds Web built-in call durations.',
      '# TYPE toolplane_web_tool_duration_seconds histogram',
    );
    for (const [tool, h] of Object.entries(this.durations))
      out.push(...h.lines('toolplane_web_tool_duration_seconds', `tool="${tool}"`));
    return `${out.join('\n')}\n`;
  }
}
