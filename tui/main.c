/*
 * fusebox: the on-call engineer's console and CLI for fuseboxd.
 *
 *   fusebox [--url URL] [--token-file FILE] [--json] [VERB ARGS...]
 *
 * Global flags come before the verb; no verb opens the console. The URL
 * is --url, else $FUSEBOX_URL, else http://127.0.0.1:7700; the token comes
 * from client_token_resolve() (client.h).
 */
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli.h"
#include "client.h"
#include "console.h"

static const char *
flag_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);

	if (strcmp(argv[*i], name) == 0)
		return *i + 1 < argc ? argv[++*i] : NULL;
	if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
		return argv[*i] + n + 1;
	return NULL;
}

int
main(int argc, char **argv)
{
	struct client cli;
	const char *url = NULL, *token_file = NULL, *source, *v;
	char *token = NULL, *cause = NULL;
	int json = 0, i, rc, role, have_client = 0;

	setlocale(LC_ALL, "");
	signal(SIGPIPE, SIG_IGN);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strncmp(argv[i], "--url", 5) == 0 &&
			   (v = flag_value(argc, argv, &i, "--url")) != NULL) {
			url = v;
		} else if (strncmp(argv[i], "--token-file", 12) == 0 &&
			   (v = flag_value(argc, argv, &i, "--token-file")) != NULL) {
			token_file = v;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			cli_usage(stdout);
			return CLI_OK;
		} else if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
			printf("fusebox %s\n", FB_VERSION);
			return CLI_OK;
		} else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else {
			fprintf(stderr, "fusebox: unknown option or missing value: %s\n", argv[i]);
			cli_usage(stderr);
			return CLI_USAGE;
		}
	}
	if (i < argc && strcmp(argv[i], "report") == 0)
		return cli_run(NULL, json, argc - i, argv + i);

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = client_token_resolve(token_file, &token, &role, &source, &cause);
	if (rc != 0) {
		fprintf(stderr, "fusebox: token (%s): %s\n", source, cause);
		rc = CLI_FAILED;
		goto out;
	}
	rc = client_init(&cli, url, token, role, &cause);
	if (rc != 0) {
		fprintf(stderr, "fusebox: %s\n", cause);
		rc = CLI_USAGE;
		goto out;
	}
	have_client = 1;
	if (i >= argc)
		rc = console_run(&cli);
	else
		rc = cli_run(&cli, json, argc - i, argv + i);
out:
	if (have_client)
		client_free(&cli);
	if (token != NULL) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	free(cause);
	curl_global_cleanup();
	return rc;
}
