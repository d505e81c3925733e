"""The dual-target room: one source for NVIDIA and AMD instead of a HIP fork (issue 31).

The CUDA tree stays the source of truth. From the fork-mode translation of a tree, ``tree.dual_tree`` makes
each file's dual-target form as a review file (so the same hunk review, flags and decisions serve it):
renames go to a generated compat header (``compat``: exactly the names the project uses, for AMD builds only),
and guarded branches (``#if defined(USE_ROCM) || defined(__HIP_PLATFORM_AMD__)``, the macro chosen per
project) appear only where the code must differ beyond renames (``source``: swapped headers, changed code,
32-lane warp constants; ``classify`` tells a rename from a change); build files get a switch
(``build``: ``make USE_ROCM=1``, CMake's ``-DUSE_ROCM=ON``, setup.py on either torch). ``write.finish`` adds
the header, the patch (``patch``) and the check of both builds (``check``: nvcc and hipcc) to the port's write.
``model`` holds the words: the options, a branch, the mode a review was made in.
"""
