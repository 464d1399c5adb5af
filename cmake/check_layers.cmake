# Fails when a lower layer includes a higher one, when a layer includes a header of a
# library it does not link, or when device code leaks out of autograd/:
#   autograd/                nothing from optim/, data/, layers/ or train/
#   optim/, data/            nothing from each other, layers/ or train/
#   layers/                  nothing from train/
#   all of these             no config (yaml-cpp), HDF5, PNG, CLI11 or JSON header
#   everything but autograd/ no CUDA header (the device is reached through the backend,
#                            autograd/backend.h), and no NCCL header but in the one file
#                            that holds the NCCL communicator (train/distributed/distributed.cpp)
# System headers resolve whatever a target links, so the compiler cannot catch
# these; the build runs this script before compiling any library.
# Usage: cmake -DSOURCE_DIR=<folder with autograd/, layers/, ...> -P check_layers.cmake
if(NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "check_layers.cmake: run with -DSOURCE_DIR=<folder>")
endif()
get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)

set(application_headers
    "^(yaml-cpp/|yaml\\.h$|H5[A-Za-z]*\\.h(pp)?$|hdf5|png\\.h$|CLI/|CLI11|nlohmann/)")
set(cuda_headers "^(cuda[A-Za-z_]*\\.h|cuda/|cublas|cudnn|curand|cusparse|cufft|cub/|thrust/|nvrtc)")
set(nccl_headers "^(nccl|nccl_net)\\.h$")
set(nccl_home "train/distributed/distributed.cpp")

# Per folder: the folders whose headers it must not include.
set(autograd_forbids optim data layers train)
set(optim_forbids data layers train)
set(data_forbids optim layers train)
set(layers_forbids train)

function(includes_of file out)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  set(headers "")
  foreach(line IN LISTS lines)
    if(line MATCHES "#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"]")
      list(APPEND headers "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out} "${headers}" PARENT_SCOPE)
endfunction()

function(sources_in folder out)
  file(GLOB_RECURSE files "${SOURCE_DIR}/${folder}/*.h" "${SOURCE_DIR}/${folder}/*.cpp"
       "${SOURCE_DIR}/${folder}/*.cu" "${SOURCE_DIR}/${folder}/*.cuh")
  set(${out} "${files}" PARENT_SCOPE)
endfunction()

set(violations "")
foreach(folder autograd optim data layers)
  list(JOIN ${folder}_forbids "|" alternatives)
  set(forbidden "^(${alternatives})/")
  list(JOIN ${folder}_forbids "/, " listed)
  set(why "${folder}/ must not include ${listed}/")
  sources_in(${folder} files)
  foreach(file IN LISTS files)
    file(RELATIVE_PATH name "${SOURCE_DIR}" "${file}")
    includes_of("${file}" headers)
    foreach(header IN LISTS headers)
      if(header MATCHES "${forbidden}")
        list(APPEND violations "${name}: #include ${header}: ${why}")
      elseif(header MATCHES "${application_headers}")
        string(CONCAT violation "${name}: #include ${header}: only train/ may use config, HDF5, "
                                "PNG, CLI or JSON headers")
        list(APPEND violations "${violation}")
      endif()
    endforeach()
  endforeach()
endforeach()

# The device seam: CUDA (and NCCL) stay behind autograd/'s backend.
foreach(folder optim data layers train)
  sources_in(${folder} files)
  foreach(file IN LISTS files)
    file(RELATIVE_PATH name "${SOURCE_DIR}" "${file}")
    includes_of("${file}" headers)
    foreach(header IN LISTS headers)
      if(header MATCHES "${cuda_headers}")
        string(CONCAT violation "${name}: #include ${header}: CUDA is called from autograd/ "
                                "alone (reach the device through autograd/backend.h)")
        list(APPEND violations "${violation}")
      elseif(header MATCHES "${nccl_headers}" AND NOT name STREQUAL nccl_home)
        string(CONCAT violation "${name}: #include ${header}: NCCL is called from ${nccl_home} "
                                "alone (the communicator)")
        list(APPEND violations "${violation}")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "layering violated (cmake/check_layers.cmake):\n  ${text}")
endif()
