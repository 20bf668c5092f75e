/*
 * guard.c - fallocate(2) refused by a seccomp filter (see guard.h).
 *
 * musl's headers carry no <linux/seccomp.h>, so the few constants of the
 * kernel's ABI the filter needs are spelled here (uapi linux/seccomp.h,
 * linux/filter.h, linux/audit.h; they never change). The filter looks only at
 * the architecture and the system call number: fallocate on the agent's own
 * architecture and on the 32-bit one the CPU also runs (int 0x80 / AArch32),
 * x32's number too; everything else is allowed, as before. The engine's own
 * seccomp profile still applies: filters stack, the strictest answer wins.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agent/guard.h"

#define G_SECCOMP_MODE_FILTER 2
#define G_SECCOMP_RET_ALLOW 0x7fff0000U
#define G_SECCOMP_RET_ERRNO 0x00050000U
#define G_BPF_LD_W_ABS 0x20 /* BPF_LD | BPF_W | BPF_ABS */
#define G_BPF_JEQ_K 0x15    /* BPF_JMP | BPF_JEQ | BPF_K */
#define G_BPF_RET_K 0x06    /* BPF_RET | BPF_K */
#define G_DATA_NR 0	    /* offsetof(struct seccomp_data, nr) */
#define G_DATA_ARCH 4	    /* offsetof(struct seccomp_data, arch) */

#if defined(__x86_64__)
#define G_ARCH 0xc000003eU		/* AUDIT_ARCH_X86_64 */
#define G_NR 285U			/* __NR_fallocate */
#define G_NR_ALIAS (285U | 0x40000000U) /* x32 */
#define G_ARCH32 0x40000003U		/* AUDIT_ARCH_I386 */
#define G_NR32 324U
#elif defined(__aarch64__)
#define G_ARCH 0xc00000b7U /* AUDIT_ARCH_AARCH64 */
#define G_NR 47U
#define G_NR_ALIAS 47U
#define G_ARCH32 0x40000028U /* AUDIT_ARCH_ARM */
#define G_NR32 352U
#else
#error "guard.c: add this architecture's fallocate numbers"
#endif

struct g_insn {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};

struct g_prog {
	unsigned short len;
	struct g_insn *filter;
};

int guard_install(void)
{
	const uint32_t deny = G_SECCOMP_RET_ERRNO | (EOPNOTSUPP & 0xffff);
	struct g_insn f[] = {
		{ G_BPF_LD_W_ABS, 0, 0, G_DATA_ARCH },
		{ G_BPF_JEQ_K, 0, 4, G_ARCH }, /* not native: to the 32-bit check */
		{ G_BPF_LD_W_ABS, 0, 0, G_DATA_NR },
		{ G_BPF_JEQ_K, 6, 0, G_NR },	   /* -> deny */
		{ G_BPF_JEQ_K, 5, 0, G_NR_ALIAS }, /* -> deny */
		{ G_BPF_RET_K, 0, 0, G_SECCOMP_RET_ALLOW },
		{ G_BPF_JEQ_K, 0, 2, G_ARCH32 }, /* neither: allow */
		{ G_BPF_LD_W_ABS, 0, 0, G_DATA_NR },
		{ G_BPF_JEQ_K, 1, 0, G_NR32 }, /* -> deny */
		{ G_BPF_RET_K, 0, 0, G_SECCOMP_RET_ALLOW },
		{ G_BPF_RET_K, 0, 0, deny },
	};
	struct g_prog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	/* a filter needs no_new_privs without CAP_SYS_ADMIN (the engine's hardening sets it already) */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return prctl(PR_SET_SECCOMP, G_SECCOMP_MODE_FILTER, &prog, 0, 0) < 0 ? -1 : 0;
}

int guard_exec_main(int argc, char **argv)
{
	if (argc < 1) {
		fputs("sandbox-mcp-agent --guard: no program\n", stderr);
		return 127;
	}
	if (guard_install() < 0) {
		fprintf(stderr, "sandbox-mcp-agent --guard: seccomp: %s\n", strerror(errno));
		return 126;
	}
	execvp(argv[0], argv);
	fprintf(stderr, "sandbox-mcp-agent --guard: %s: %s\n", argv[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
