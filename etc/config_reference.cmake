# cmake -DSVCD=path/to/svcd -DFORMAT=markdown|man -DOUT=file -P config_reference.cmake
# Writes the configuration reference (`svcd --config-reference`) of svcd and the plugins beside it
# to OUT; a failure to load a plugin fails the build.
if(FORMAT STREQUAL "man")
  set(_flag --config-reference=man)
else()
  set(_flag --config-reference)
endif()
get_filename_component(_dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${_dir})
set(ENV{ASAN_OPTIONS} detect_leaks=0)
# Every bundled plugin, whatever SVC_PLUGINS_ENABLED the environment holds.
execute_process(COMMAND ${SVCD} ${_flag} --set plugins.enabled=* OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE _rc
  ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "svcd --config-reference failed (${_rc}): ${_err}")
endif()
file(RENAME ${OUT}.tmp ${OUT})
