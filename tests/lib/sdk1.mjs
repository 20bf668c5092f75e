// The official 1.x SDK client, re-exported from here so that test trees
// outside tests/e2e (tests/integration) resolve the copy pinned in
// tests/node_modules.
export { Client } from '@modelcontextprotocol/sdk/client/index.js';
export { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
export { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
export { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
