// http-anchor.mjs - the protocol-overhead anchor of the HTTP benchmark
// (tests/bench/http-bench.sh): the official TypeScript SDK 1.x's Streamable
// HTTP example server, in the shape of the SDK's own
// examples/server/jsonResponseStreamableHttp.js (stateful: one transport per
// Mcp-Session-Id, issued at initialize; answers as application/json), with one
// trivial tool, `greet`, taken from that example. Only its per-request
// console.log lines are left out, which would make the anchor slower.
//
// Usage: node tests/bench/http-anchor.mjs PORT
// The SDK comes from tests/node_modules (pinned by its package-lock.json).
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(new URL('../package.json', import.meta.url));
const load = (name) => import(pathToFileURL(require.resolve(name)).href);
const { McpServer } = await load('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = await load('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { createMcpExpressApp } = await load('@modelcontextprotocol/sdk/server/express.js');
const { isInitializeRequest } = await load('@modelcontextprotocol/sdk/types.js');
const z = await load('zod/v4');

const port = Number(process.argv[2] || 3000);

const getServer = () => {
  const server = new McpServer({ name: 'http-anchor', version: '1.0.0' }, { capabilities: { logging: {} } });
  server.registerTool('greet', {
    description: 'A simple greeting tool',
    inputSchema: { name: z.string().describe('Name to greet') },
  }, async ({ name }) => ({ content: [{ type: 'text', text: `Hello, ${name}!` }] }));
  return server;
};

const app = createMcpExpressApp();
const transports = new Map();

app.post('/mcp', async (req, res) => {
  try {
    const sessionId = req.headers['mcp-session-id'];
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport && !sessionId && isInitializeRequest(req.body)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (sid) => { transports.set(sid, transport); },
      });
      transport.onclose = () => { if (transport.sessionId) transports.delete(transport.sessionId); };
      await getServer().connect(transport);
    } else if (!transport) {
      res.status(sessionId ? 404 : 400).json({
        jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: no valid session ID' }, id: null,
      });
      return;
    }
    await transport.handleRequest(req, res, req.body);
  } catch (error) {
    if (!res.headersSent)
      res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: String(error) }, id: null });
  }
});

app.get('/mcp', (req, res) => { res.status(405).set('Allow', 'POST').send('Method Not Allowed'); });

app.listen(port, '127.0.0.1', (error) => {
  if (error) {
    console.error('http-anchor:', error);
    process.exit(1);
  }
  console.log(`http-anchor listening on 127.0.0.1:${port}`);
});
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
