"""Helpers that tests in more than one folder of tests/ import: jobs, runs, installs and the
command as the tests build them (the kit's builders come from `jobcore.testing`)."""
