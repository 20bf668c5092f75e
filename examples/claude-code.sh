#!/bin/sh
# Registers sandbox-mcp with Claude Code for the current user.
# `sandbox-mcp config claude-code` prints this line with the binary's real path.
exec claude mcp add --scope user sandbox -e SANDBOX_MEMORY_MB=1024 -- /usr/local/bin/sandbox-mcp
