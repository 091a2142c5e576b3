// Production entry point: the HTTP API only, API_WORKERS processes of it (scale it out; the writer
// runs in worker.ts).
import { serveApi } from './boot/api.ts';
import { boot } from './boot/boot.ts';
import { run } from './boot/run.ts';

await run('api', () => boot('api'), serveApi);
