// The yardstick of the cheap answers: a bare node:http server that reads the request body and answers
// the status and a JSON body of the byte size its query names (POST /?status=429&bytes=120), nothing
// else. Run as its own process (`tsx bench/order/bare-http.ts <port>`), so its CPU is its own.
import { createServer } from 'node:http';

const port = Number(process.argv[2]);
const bodies = new Map<string, { status: number; body: string }>();

/** `{"pad":"xxx…"}` of exactly `bytes` bytes (at least the 10 of the empty padding). */
function bodyOf(query: string): { status: number; body: string } {
  let answer = bodies.get(query);
  if (!answer) {
    const q = new URLSearchParams(query);
    const bytes = Number(q.get('bytes') ?? 2);
    answer = {
      status: Number(q.get('status') ?? 200),
      body: `{"pad":"${'x'.repeat(Math.max(0, bytes - 10))}"}`,
    };
    bodies.set(query, answer);
  }
  return answer;
}

createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const url = req.url ?? '/';
    // Anything but `/?…` (the load's tail) is a 404, as on the API.
    const { status, body } = url.startsWith('/?') ? bodyOf(url.slice(2)) : { status: 404, body: '{}' };
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(body);
  });
}).listen(port, '127.0.0.1', () => process.stdout.write('listening\n'));
