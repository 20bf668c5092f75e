/*
 * test-servercontainer.c - this process's container id from mountinfo:
 * Docker's and Podman's hostname mount at /etc/hostname name it; on the
 * host, other containers' mounts (their shm, their hostname files mounted
 * elsewhere) must not pass for this process's container.
 */
#include "testutil.h"

#include <string.h>

#include "sandbox/servercontainer.h"

#define ID "0816ef3aa742258ddb7e65b33ec9c5259497dcc2b2555ac23f008741eee33d60"

static void parse(const char *text, char out[ENGINE_ID_LEN + 1])
{
	servercontainer_parse(text, strlen(text), out);
}

static void test_docker_and_podman(void **state)
{
	char out[ENGINE_ID_LEN + 1];
	(void)state;
	parse("582 563 0:50 / / rw,relatime - overlay overlay rw\n"
	      "597 582 254:0 /var/lib/docker/containers/" ID "/resolv.conf /etc/resolv.conf rw - ext4 /dev/vda rw\n"
	      "598 582 254:0 /var/lib/docker/containers/" ID "/hostname /etc/hostname rw - ext4 /dev/vda rw\n",
	      out);
	assert_string_equal(out, ID);
	parse("700 690 0:60 /var/lib/containers/storage/overlay-containers/" ID
	      "/userdata/hostname /etc/hostname rw - tmpfs tmpfs rw",
	      out);
	assert_string_equal(out, ID);
}

static void test_host_and_bad(void **state)
{
	char out[ENGINE_ID_LEN + 1];
	(void)state;
	/* the host sees other containers' shm mounts: not this process's container */
	parse("30 1 254:0 / / rw - ext4 /dev/vda rw\n"
	      "99 30 0:70 / /var/lib/docker/containers/" ID "/mounts/shm rw - tmpfs shm rw\n",
	      out);
	assert_string_equal(out, "");
	static const char *const bad[] = {
		/* a container's hostname file mounted somewhere else */
		"98 30 254:0 /var/lib/docker/containers/" ID "/hostname /mnt/hostname rw - ext4 /dev/vda rw\n",
		/* a short or non-hex id, an id not ended by '/', a line cut short, nothing */
		"98 30 254:0 /var/lib/docker/containers/0816ef3a/hostname /etc/hostname rw\n",
		"98 30 254:0 /containers/" ID "X/hostname /etc/hostname rw\n",
		"98 30 254:0 /containers/" ID "/hostname",
		"",
		/* a mount point that only starts like /etc/hostname */
		"98 30 254:0 /containers/" ID "/hostname /etc/hostnames rw\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		parse(bad[i], out);
		assert_string_equal(out, "");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_and_podman),
		cmocka_unit_test(test_host_and_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
