"""python -m cesync.cli"""

from . import run

run()
