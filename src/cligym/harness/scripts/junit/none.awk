# The fallback converter: no inner runner reports per test, so the autopkgtest test is one
# result from its exit status and stderr (common.awk's finish with nothing recorded).
END { finish() }
