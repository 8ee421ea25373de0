/**
 * A worker thread of the schema service: loads the engine once, then runs one job at a time
 * (see WorkerPool). The service terminates it when a job passes the time limit.
 */
import './compile-cache'; // before the engine loads
import { workerData } from 'node:worker_threads';
import { createSchemaEngine, type SchemaEngine } from '@toolplane/schema-engine';
import { runSchemaJob, type SchemaJob, type SchemaWorkerData } from './schemas.jobs';
import { serveJobs } from './worker-pool';

const { engine: options, maxEchoedSchemaBytes } = workerData as SchemaWorkerData;
let engine: SchemaEngine | undefined;
const ready = createSchemaEngine(options).then((e) => (engine = e));
serveJobs((job) => runSchemaJob(engine!, job as SchemaJob, maxEchoedSchemaBytes), ready);
