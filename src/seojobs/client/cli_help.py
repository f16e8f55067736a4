"""Help texts of the client commands: what each does, its exit codes, real examples."""

from __future__ import annotations

EXIT_CODES_HELP = (
    "Exit codes: 0 completed (or submitted, without --wait); 1 a job failed; 2 usage error, "
    "malformed input, request refused or bad API key; 3 --timeout passed; 4 rate-limited or "
    "server unavailable; 130 interrupted (Ctrl-C never cancels a job on the server)."
)

SUBMIT_EPILOG = (
    f"{EXIT_CODES_HELP}\n\n"
    "Examples:\n\n"
    "  seojobs submit https://example.com/a https://example.com/b --engine bing\n"
    "  seojobs submit -f urls.txt --checker 3   # and check the index 3 days later\n"
    "  cat urls.txt | seojobs submit --wait --json > result.json\n"
    "  seojobs check -f urls.txt --wait --timeout 3600\n"
    "  seojobs submit --type index_check -f urls.txt --param engine=bing --project example.com\n"
    "  seojobs submit --type titles --param 'urls=[\"https://example.com/\"]' --wait --json"
)

SUBMIT_HELP = (
    "Start an index-submit job: ask search engines to crawl the URLs.\n\n"
    "Prints the job id (with --json, the job's JSON body). The submission is recorded in the "
    "state file with its idempotency key before it is sent, so `seojobs poll` can always "
    "finish what a crash interrupted without creating a second job. With --wait, waits until "
    "the job (and a scheduled --checker check) has finished and saves the result.\n\n"
    "With --type, starts a job of that type (any the server runs: GET /v1/job-types) in a "
    "project instead: --param KEY=VALUE gives its params (VALUE is JSON when it parses, else "
    "text), URLs from arguments or -f FILE become its urls, --project names the project (an id "
    "or a name; default: your default project). An index_submit or index_check job started "
    "so is waited on, saved and printed as the indexing API shows it (report and scheduled "
    "check included)."
)

CHECK_HELP = (
    "Start an index-check job: is each URL indexed, and if not, why not.\n\n"
    "Prints the job id (with --json, the job's JSON body); with --wait, waits for the result, "
    "saves it in the state file and exits by its status. Input and state as for `submit`."
)

WAIT_HELP = (
    "Wait for jobs to finish, polling them all on one timer, and save their results.\n\n"
    'Prints one "ID KIND STATUS" line per job (with --json, a JSON list of the job bodies). '
    "Jobs of any type: an id not in the state file is looked up on the server. "
    "Ctrl-C stops waiting; the jobs keep running on the server."
)

POLL_HELP = (
    "Resume every open job in the state file; save each final result, then mark it done.\n\n"
    "Never submits anything new: a submission whose answer was not recorded is re-sent with "
    "its saved idempotency key, and the server answers with the job it already made. Safe to "
    "run from cron while another run is active: a file lock makes the second one skip (exit "
    "0). With --json, prints a summary: resubmitted, saved, open, missing, skipped."
)

REPORT_HELP = "Print a job's report: one row per URL, as CSV or as one JSON document."

JOBS_HELP = (
    "List the jobs in the state file for this server: state, last status, when made.\n\n"
    "STATE is submitting (answer not recorded yet), open (being watched) or done (final "
    "result saved)."
)

WAIT_EPILOG = (
    f"{EXIT_CODES_HELP}\n\n"
    "Examples:\n\n"
    "  seojobs wait 48211 48212 --timeout 600\n"
    "  seojobs wait 90314 --kind index_check --json | jq '.[0].indexed_count'\n"
    "  seojobs wait 90315 --type titles --timeout 7200\n"
    "  seojobs wait 90316 90317 --webhook-port 0   # server on this machine, loopback allowed"
)

POLL_EPILOG = (
    "Exit codes: 0 the round ran (or another run held the lock), whatever the jobs' "
    "outcomes; 2 bad API key; 3 --timeout passed; 4 rate-limited or server unavailable "
    "(nothing lost: the next run resumes); 130 interrupted.\n\n"
    "Examples:\n\n"
    "  seojobs poll                      # until every open job has finished\n"
    "  */10 * * * * seojobs poll --once  # crontab: resume and save, 10-minutely"
)

REPORT_EPILOG = (
    "Exit codes: 0 printed; 2 no such job, or bad API key; 4 rate-limited or server "
    "unavailable.\n\n"
    "Examples:\n\n"
    "  seojobs report 48211 > report.csv\n"
    "  seojobs report 90314 --format json | jq '.rows[] | select(.status != \"indexed\")'"
)

JOBS_EPILOG = (
    "Examples:\n\n"
    "  seojobs jobs --open --refresh\n"
    "  seojobs jobs --json | jq '.[] | select(.state == \"open\") | .job_id'"
)
