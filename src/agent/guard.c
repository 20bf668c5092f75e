/*
 * guard.c - allocation without writing refused by a seccomp filter (see
 * guard.h): fallocate(2), the ioctls the kernel turns into it
 * (FS_IOC_RESVSP, FS_IOC_RESVSP64, FS_IOC_ZERO_RANGE), and io_uring_setup
 * (a ring runs IORING_OP_FALLOCATE past any filter on system calls); on the
 * agent's own architecture, its x32 numbers, and the 32-bit one the CPU also
 * runs (int 0x80 / AArch32). Everything else is allowed, as before.
 *
 * musl's headers carry no <linux/seccomp.h>, so the few constants of the
 * kernel's ABI the filter needs are spelled here (uapi linux/seccomp.h,
 * linux/filter.h, linux/audit.h, linux/fs.h; they never change). The
 * engine's own seccomp profile still applies: filters stack, the strictest
 * answer wins.
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
#define G_BPF_AND_K 0x54    /* BPF_ALU | BPF_AND | BPF_K */
#define G_BPF_JEQ_K 0x15    /* BPF_JMP | BPF_JEQ | BPF_K */
#define G_BPF_RET_K 0x06    /* BPF_RET | BPF_K */
#define G_DATA_NR 0	    /* offsetof(struct seccomp_data, nr) */
#define G_DATA_ARCH 4	    /* offsetof(struct seccomp_data, arch) */
#define G_DATA_ARG1 24	    /* offsetof(struct seccomp_data, args[1]), its low half (little-endian) */

/*
 * The ioctls that allocate like fallocate (fs/ioctl.c turns them into
 * vfs_fallocate), by their low 16 bits ('X' and the number), so the 32-bit
 * struct's sizes match too: FS_IOC_RESVSP, FS_IOC_RESVSP64, FS_IOC_ZERO_RANGE.
 */
#define G_IOC_RESVSP 0x5828U
#define G_IOC_RESVSP64 0x582aU
#define G_IOC_ZERO_RANGE 0x5839U

#if defined(__x86_64__)
#define G_ARCH 0xc000003eU /* AUDIT_ARCH_X86_64 */
#define G_NR_FALLOCATE 285U
#define G_NR_IOCTL 16U
#define G_X32 0x40000000U /* x32's numbers: ioctl is 514 there */
#define G_NR_FALLOCATE_X32 (G_X32 | 285U)
#define G_NR_IOCTL_X32 (G_X32 | 514U)
#define G_ARCH32 0x40000003U /* AUDIT_ARCH_I386 */
#define G_NR32_FALLOCATE 324U
#define G_NR32_IOCTL 54U
#elif defined(__aarch64__)
#define G_ARCH 0xc00000b7U /* AUDIT_ARCH_AARCH64 */
#define G_NR_FALLOCATE 47U
#define G_NR_IOCTL 29U
#define G_X32 0U
#define G_NR_FALLOCATE_X32 G_NR_FALLOCATE
#define G_NR_IOCTL_X32 G_NR_IOCTL
#define G_ARCH32 0x40000028U /* AUDIT_ARCH_ARM */
#define G_NR32_FALLOCATE 352U
#define G_NR32_IOCTL 54U
#else
#error "guard.c: add this architecture's system call numbers"
#endif
/* io_uring_setup has the same number everywhere: a ring runs fallocate as IORING_OP_FALLOCATE */
#define G_NR_URING 425U

struct g_insn {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};

struct g_prog {
	unsigned short len;
	struct g_insn *filter;
};

/* A jump from instruction at to target (classic BPF jumps forward only). */
#define G_TO(at, target) ((uint8_t)((target) - (at)-1))

int guard_install(void)
{
	enum { L32 = 9, IOCTL = 14, ALLOW = 19, DENY = 20 };
	const uint32_t deny = G_SECCOMP_RET_ERRNO | (EOPNOTSUPP & 0xffff);
	struct g_insn f[] = {
		/* 0 */ { G_BPF_LD_W_ABS, 0, 0, G_DATA_ARCH },
		/* 1 */ { G_BPF_JEQ_K, 0, G_TO(1, L32), G_ARCH },
		/* 2 */ { G_BPF_LD_W_ABS, 0, 0, G_DATA_NR },
		/* 3 */ { G_BPF_JEQ_K, G_TO(3, DENY), 0, G_NR_FALLOCATE },
		/* 4 */ { G_BPF_JEQ_K, G_TO(4, DENY), 0, G_NR_FALLOCATE_X32 },
		/* 5 */ { G_BPF_JEQ_K, G_TO(5, DENY), 0, G_NR_URING },
		/* 6 */ { G_BPF_JEQ_K, G_TO(6, DENY), 0, G_X32 | G_NR_URING },
		/* 7 */ { G_BPF_JEQ_K, G_TO(7, IOCTL), 0, G_NR_IOCTL },
		/* 8 */ { G_BPF_JEQ_K, G_TO(8, IOCTL), G_TO(8, ALLOW), G_NR_IOCTL_X32 },
		/* 9: the other architecture the CPU runs (the accumulator holds arch) */
		/* 9 */ { G_BPF_JEQ_K, 0, G_TO(9, ALLOW), G_ARCH32 },
		/* 10 */ { G_BPF_LD_W_ABS, 0, 0, G_DATA_NR },
		/* 11 */ { G_BPF_JEQ_K, G_TO(11, DENY), 0, G_NR32_FALLOCATE },
		/* 12 */ { G_BPF_JEQ_K, G_TO(12, DENY), 0, G_NR_URING },
		/* 13 */ { G_BPF_JEQ_K, G_TO(13, IOCTL), G_TO(13, ALLOW), G_NR32_IOCTL },
		/* 14: ioctl: its request */
		/* 14 */ { G_BPF_LD_W_ABS, 0, 0, G_DATA_ARG1 },
		/* 15 */ { G_BPF_AND_K, 0, 0, 0xffffU },
		/* 16 */ { G_BPF_JEQ_K, G_TO(16, DENY), 0, G_IOC_RESVSP },
		/* 17 */ { G_BPF_JEQ_K, G_TO(17, DENY), 0, G_IOC_RESVSP64 },
		/* 18 */ { G_BPF_JEQ_K, G_TO(18, DENY), G_TO(18, ALLOW), G_IOC_ZERO_RANGE },
		/* 19 */ { G_BPF_RET_K, 0, 0, G_SECCOMP_RET_ALLOW },
		/* 20 */ { G_BPF_RET_K, 0, 0, deny },
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
