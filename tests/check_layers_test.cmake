# Shows that cmake/check_layers.cmake catches what it should: it passes on a clean
# tree, then fails, naming the file, on each planted bad include.
# Usage: cmake -DCHECKER=<check_layers.cmake> -DWORK_DIR=<scratch folder> -P check_layers_test.cmake
function(run_checker tree result_var output_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${tree} -P ${CHECKER}
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${result_var} ${result} PARENT_SCOPE)
  set(${output_var} "${out}${err}" PARENT_SCOPE)
endfunction()

# A tree with allowed includes only, plus `file` holding `line` when given.
function(make_tree tree file line)
  file(REMOVE_RECURSE ${tree})
  file(WRITE ${tree}/autograd/ops/ok.cpp
       "#include <vector>\n#include <fmt/format.h>\n#include \"autograd/tensor.h\"\n"
       "// #include \"train/config/config.h\" (a comment, not an include)\n")
  file(WRITE ${tree}/layers/position/ok.cpp
       "#include \"autograd/tensor.h\"\n#include \"optim/parameter.h\"\n"
       "#include \"data/batch.h\"\n")
  file(WRITE ${tree}/train/ok.cpp "#include <yaml-cpp/yaml.h>\n#include \"layers/module.h\"\n")
  file(WRITE ${tree}/train/distributed/distributed.cpp "#include <mpi.h>\n#include <nccl.h>\n")
  file(WRITE ${tree}/autograd/cuda/ok.cu "#include <cuda_runtime.h>\n#include <cublas_v2.h>\n")
  if(NOT file STREQUAL "")
    file(APPEND ${tree}/${file} "${line}\n")
  endif()
endfunction()

make_tree(${WORK_DIR}/clean "" "")
run_checker(${WORK_DIR}/clean result output)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the checker rejected a clean tree:\n${output}")
endif()

set(cases
    "autograd/ops/ok.cpp|#include \"layers/module.h\""
    "autograd/cuda/bad.cu|#include \"train/config/config.h\""
    "autograd/bad.h|#  include \"optim/adam.h\""
    "autograd/cpu/bad.cpp|#include \"data/batch.h\""
    "autograd/bad.cpp|#include <yaml-cpp/yaml.h>"
    "autograd/bad.cpp|#include <H5Cpp.h>"
    "autograd/bad.cpp|#include <png.h>"
    "autograd/bad.cpp|#include <CLI/CLI.hpp>"
    "autograd/bad.cpp|#include <nlohmann/json.hpp>"
    "layers/position/ok.cpp|#include \"train/config/config.h\""
    "optim/bad.h|#include \"train/store/checkpoint.h\""
    "data/bad.cpp|#include <H5Cpp.h>"
    "optim/bad.cpp|#include \"layers/module.h\""
    "optim/bad.cpp|#include \"data/batch.h\""
    "data/bad.cpp|#include \"optim/parameter.h\""
    "data/bad.h|#include \"layers/transformer.h\""
    "train/bad.cpp|#include <cuda_runtime.h>"
    "train/distributed/data_parallel.cpp|#include <cuda_runtime_api.h>"
    "layers/bad.cpp|#include <cublas_v2.h>"
    "optim/bad.cu|#include <cuda/std/cmath>"
    "train/bad.cpp|#include <nccl.h>"
    "data/bad.cpp|#include <nccl.h>")
foreach(case IN LISTS cases)
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 file)
  list(GET parts 1 line)
  make_tree(${WORK_DIR}/bad "${file}" "${line}")
  run_checker(${WORK_DIR}/bad result output)
  if(result EQUAL 0)
    message(FATAL_ERROR "the checker missed '${line}' in ${file}")
  endif()
  if(NOT output MATCHES "${file}")
    message(FATAL_ERROR "the checker failed on '${line}' but did not name ${file}:\n${output}")
  endif()
  message(STATUS "caught: ${file}: ${line}")
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
