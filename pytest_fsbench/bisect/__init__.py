"""`fsbench bisect`: from a regression between two commits of a kernel's git history to the commit
that made it, a layer above the session. It checks commits out and builds their kernels (tree.py,
build.py), chooses the next commit as git bisect does (search.py), measures each step's kernel
interleaved with the good and the bad endpoint's in one pytest session that stops once decided
(looks.py, a plugin of that session), decides with the verdicts' own code (verdicts/bisection.py),
keeps its record in the store, and writes its page (views/bisect_page.py). It may import every
layer below the entry points, and the plugin (looks.py reads the session it runs in)."""
