/*
 * fuzz-image.c - image names a model passes to session_commit and
 * session_export (image.h), and the SANDBOX_COMMIT_REPOS patterns.
 *
 * The input is "repository" or "repository\0patterns". What must hold: the
 * grammar check only accepts or refuses; the familiar form is no longer than
 * the name; a name the default patterns accept really is one of ours once
 * docker resolves it (sandbox-mcp-... on Docker Hub, or localhost/sandbox-mcp/...),
 * however its registry host is spelled; "*" accepts every name; a reference
 * names the same tag as itself; a name the check accepts imageref_parse reads.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/imageref.h"
#include "fuzz.h"
#include "sandbox/image.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static void check_name(const char *repo, const char *patterns)
{
	char host[IMAGE_REF_MAX + 1], path[IMAGE_REF_MAX + 16];
	struct err e;

	int r = image_repository_check(repo, &e);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (imageref_split_repo(repo, host, sizeof(host), path, sizeof(path))) {
		FUZZ_CHECK(strlen(host) > 0 && !strchr(host, '/'));
		FUZZ_CHECK(strlen(path) <= strlen(repo) + 8);
	}
	FUZZ_CHECK(image_repo_matches(repo, "*"));
	(void)image_repo_matches(repo, patterns);
	if (r < 0)
		return;
	/* one grammar: a repository the check accepts is a reference imageref reads */
	struct imageref ir;
	FUZZ_CHECK(imageref_parse(repo, strlen(repo), &ir, &e) == 0);
	FUZZ_CHECK(image_same_ref(repo, repo));
	/* the default allows one component under its prefix, on Docker Hub or localhost: nothing deeper */
	if (image_repo_matches(repo, CONFIG_COMMIT_REPOS_DEFAULT)) {
		FUZZ_CHECK(imageref_split_repo(repo, host, sizeof(host), path, sizeof(path)));
		bool hub = strcmp(host, "docker.io") == 0 && strncmp(path, "library/sandbox-mcp-", 20) == 0;
		bool local = strcmp(host, "localhost") == 0 && strncmp(path, "sandbox-mcp/", 12) == 0;
		FUZZ_CHECK((hub && !strchr(path + 8, '/')) || (local && !strchr(path + 12, '/')));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4 * IMAGE_REF_MAX)
		return 0;
	char *buf = malloc(size + 2);
	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	buf[size] = '\0';
	buf[size + 1] = '\0';
	const char *patterns = CONFIG_COMMIT_REPOS_DEFAULT;
	char *nul = memchr(buf, '\0', size);
	if (nul)
		patterns = nul + 1;
	check_name(buf, patterns);
	free(buf);
	return 0;
}
