import sys

from memstrata.cli import main

# ``python -m memstrata`` sets argv[0] to this file's path; the data dir's lock
# file records the command line, so name it as the user typed it.
sys.argv[0] = "memstrata"
main()
