/*
 * relay.h - the agent's egress relay (relay.c): listens on the sandbox's
 * loopback and carries each connection to the server over agentproto.h's
 * relay frames on stdin/stdout.
 */
#ifndef RELAY_H
#define RELAY_H

/* Runs until stdin ends or the server breaks the protocol. port: decimal. The exit status. */
int relay_main(const char *port);

#endif
