"""End-to-end runs of the real rho: a week of missions, kill -9 trials, hostile and untrusted
tasks, crashes under load."""
