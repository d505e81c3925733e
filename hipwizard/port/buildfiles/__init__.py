"""Build files are part of the port: Makefiles, CMake, setup.py/pyproject and shell build scripts translated
from nvcc/CUDA to hipcc/HIP, with flags where a human must decide (see ``dispatch`` for which files, and
``assets/cuda_libraries.yaml`` for the library table).

Pure translators (text in, ``BuildTranslation`` out); ``review.build_file_translation`` makes the review's
``FileTranslation`` of one, flags attached to its hunks.
"""

from hipwizard.port.buildfiles.dispatch import build_kind, translate_build_file
from hipwizard.port.buildfiles.libraries import CudaLibrary, LibraryTable, library_table
from hipwizard.port.buildfiles.model import DEFAULT_ARCH, BuildFlag, BuildTarget, BuildTranslation

__all__ = ["DEFAULT_ARCH", "BuildFlag", "BuildTarget", "BuildTranslation", "CudaLibrary", "LibraryTable",
           "build_kind", "library_table", "translate_build_file"]
