# svc_add_plugin(NAME source...): a plugin library named svc_plugin_<NAME>.so, built with hidden
# visibility (only the Boost.DLL aliases are exported: svc_plugin_abi and svc_plugin_create, and
# svc_cli_abi and svc_cli_commands when it has svcctl commands) and linked against the SDK.
function(svc_add_plugin name)
  add_library(svc_plugin_${name} MODULE ${ARGN})
  set_target_properties(svc_plugin_${name} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(svc_plugin_${name} PRIVATE SvcSdk::sdk)
endfunction()
