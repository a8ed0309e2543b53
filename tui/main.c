/*
 * fusebox: the on-call engineer's console and CLI for fuseboxd.
 *
 *   fusebox [--url URL] [--token-file FILE] [--json] [VERB ARGS...]
 *
 * Global flags stand before or after the verb (up to "--"); no verb opens
 * the console. The URL is --url, else $FUSEBOX_URL, else the daemon's
 * address file (client_discover()), else http://127.0.0.1:7700; the token
 * comes from client_token_resolve()
 * (client.h). The fleet file is --fleet, else $FUSEBOX_FLEET unless --url
 * is given (fleet_cli.h).
 */
#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli.h"
#include "client.h"
#include "console.h"
#include "fleet.h"
#include "fleet_cli.h"
#include "fleet_console.h"
#include "screen_slo.h"

/* Whether a verb's arguments (up to "--") name --prometheus. */
static int
wants_prometheus(int argc, char **argv)
{
	int k;

	for (k = 1; k < argc && strcmp(argv[k], "--") != 0; k++)
		if (strcmp(argv[k], "--prometheus") == 0 ||
		    strncmp(argv[k], "--prometheus=", 13) == 0)
			return 1;
	return 0;
}

int
main(int argc, char **argv)
{
	struct client cli;
	struct cli_globals g = {0};
	struct fleet fleet = {0};
	const char *source, *env, *prom = NULL;
	char *token = NULL, *cause = NULL;
	int i, n, rc, role, have_client = 0, werr;

	setlocale(LC_ALL, "");
	signal(SIGPIPE, SIG_IGN);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		/* The console's fleet SLOs (the SLO screen's f); `slo --prometheus` is the verb's.
		 */
		if (strcmp(argv[i], "--prometheus") == 0 ||
		    strncmp(argv[i], "--prometheus=", 13) == 0) {
			prom = argv[i][12] == '=' ? argv[i] + 13 : i + 1 < argc ? argv[++i] : NULL;
			if (prom == NULL || prom[0] == '\0') {
				fprintf(stderr, "fusebox: --prometheus needs a URL\n");
				return CLI_USAGE;
			}
			continue;
		}
		rc = cli_global_flag(argc, argv, &i, &g);
		if (rc == CLI_USAGE)
			return CLI_USAGE;
		if (rc == 0) {
			fprintf(stderr, "fusebox: unknown option: %s\n", argv[i]);
			cli_usage(stderr);
			return CLI_USAGE;
		}
	}
	if (i < argc) {
		n = cli_globals_take(argc - i, argv + i, &g);
		if (n < 0)
			return CLI_USAGE;
		argc = i + n;
	}
	if (prom != NULL && i < argc) {
		fprintf(stderr, "fusebox: --prometheus URL before a verb is the console's; "
				"for the CLI: fusebox slo --prometheus URL [ROUTE]\n");
		return CLI_USAGE;
	}
	env = getenv("FUSEBOX_PROMETHEUS");
	if (prom == NULL && env != NULL && env[0] != '\0')
		prom = env;
	screen_slo_prometheus(prom);
	if (g.help || g.version) {
		rc = CLI_OK;
		if (g.help && i < argc)
			rc = cli_verb_usage(stdout, argv[i]);
		else if (g.help)
			cli_usage(stdout);
		else
			printf("fusebox %s\n", FB_VERSION);
		goto out;
	}
	if (i < argc && strcmp(argv[i], "report") == 0) {
		rc = cli_run(NULL, g.json, argc - i, argv + i);
		goto out;
	}
	/* The fleet's SLOs from Prometheus: no daemon, no token, no fleet file. */
	if (i < argc && strcmp(argv[i], "slo") == 0 && wants_prometheus(argc - i, argv + i)) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		rc = cli_run(NULL, g.json, argc - i, argv + i);
		goto out;
	}

	env = getenv("FUSEBOX_FLEET");
	if (g.fleet == NULL && g.url == NULL && env != NULL && env[0] != '\0')
		g.fleet = env;
	if ((g.fleet != NULL && g.url != NULL) || (g.host != NULL && g.fleet == NULL)) {
		fprintf(stderr, "fusebox: %s\n",
			g.host != NULL && g.fleet == NULL ? "--host NAME needs --fleet FILE"
							  : "--url and --fleet: give one");
		rc = CLI_USAGE;
		goto out;
	}
	if (g.fleet != NULL && (rc = fleet_load(g.fleet, &fleet, &cause)) != 0) {
		fprintf(stderr, "fusebox: %s\n", cause);
		rc = CLI_USAGE;
		goto out;
	}
	if (g.fleet != NULL && g.host != NULL && i >= argc) {
		/* --host NAME without a verb: the console on that one host. */
		if ((n = fleet_find(&fleet, g.host)) < 0) {
			fprintf(stderr, "fusebox: --host: no host named \"%s\" in the fleet\n",
				g.host);
			rc = CLI_USAGE;
			goto out;
		}
		g.url = fleet.hosts[n].url;
		if (fleet.hosts[n].token_file != NULL)
			g.token_file = fleet.hosts[n].token_file;
		g.fleet = NULL;
	}

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = client_token_resolve(g.token_file, &token, &role, &source, &cause);
	if (rc != 0) {
		fprintf(stderr, "fusebox: token (%s): %s\n", source, cause);
		rc = CLI_FAILED;
		goto out;
	}
	rc = client_init(&cli, g.url, token, role, &cause);
	if (rc != 0) {
		fprintf(stderr, "fusebox: %s\n", cause);
		rc = CLI_USAGE;
		goto out;
	}
	have_client = 1;
	/* Not for a fleet: each host has its URL in the fleet file. */
	if (g.fleet == NULL) {
		env = getenv("FUSEBOX_URL");
		client_discover(&cli, g.addr_file,
				g.url != NULL || (env != NULL && env[0] != '\0'));
	}
	if (g.fleet != NULL && i >= argc)
		rc = fleet_console_run(&fleet, token, role, g.fleet);
	else if (g.fleet != NULL)
		rc = fleet_cli_run(&fleet, token, role, g.host, g.json, argc - i, argv + i);
	else if (i >= argc)
		rc = console_run(&cli);
	else
		rc = cli_run(&cli, g.json, argc - i, argv + i);
out:
	if (have_client)
		client_free(&cli);
	if (token != NULL) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	free(cause);
	fleet_free(&fleet);
	screen_slo_fleet_stop();
	curl_global_cleanup();
	/* A write error is a failure (> /dev/full); a reader that went away is not. */
	werr = fflush(stdout) != 0 ? errno : ferror(stdout) ? EIO : 0;
	if (werr != 0 && werr != EPIPE) {
		fprintf(stderr, "fusebox: writing the output: %s\n", strerror(werr));
		if (rc == CLI_OK)
			rc = CLI_FAILED;
	}
	return rc;
}
