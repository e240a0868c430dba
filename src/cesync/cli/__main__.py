"""python -m cesync.cli"""

from . import main

main()
