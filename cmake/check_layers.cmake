# Fails when a lower layer includes a higher one, or a header of a library it does
# not link:
#   autograd/                nothing from layers/, optim/, data/ or train/
#   layers/, optim/, data/   nothing from train/
#   all of them              no config (yaml-cpp), HDF5, PNG, CLI11 or JSON header
# System headers resolve whatever a target links, so the compiler cannot catch
# these; the build runs this script before compiling any library.
# Usage: cmake -DSOURCE_DIR=<folder with autograd/, layers/, ...> -P check_layers.cmake
if(NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "check_layers.cmake: run with -DSOURCE_DIR=<folder>")
endif()
get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)

set(application_headers
    "^(yaml-cpp/|yaml\\.h$|H5[A-Za-z]*\\.h(pp)?$|hdf5|png\\.h$|CLI/|CLI11|nlohmann/)")
set(autograd_forbids "^(layers|optim|data|train)/")
set(model_forbids "^train/")

set(violations "")
foreach(folder autograd layers optim data)
  if(folder STREQUAL "autograd")
    set(forbidden "${autograd_forbids}")
    set(why "autograd/ must not include layers/, optim/, data/ or train/")
  else()
    set(forbidden "${model_forbids}")
    set(why "${folder}/ (relpos_model) must not include train/")
  endif()
  file(GLOB_RECURSE files "${SOURCE_DIR}/${folder}/*.h" "${SOURCE_DIR}/${folder}/*.cpp"
       "${SOURCE_DIR}/${folder}/*.cu" "${SOURCE_DIR}/${folder}/*.cuh")
  foreach(file IN LISTS files)
    file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    file(RELATIVE_PATH name "${SOURCE_DIR}" "${file}")
    foreach(line IN LISTS includes)
      if(NOT line MATCHES "#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"]")
        continue()
      endif()
      set(header "${CMAKE_MATCH_1}")
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

if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "layering violated (cmake/check_layers.cmake):\n  ${text}")
endif()
