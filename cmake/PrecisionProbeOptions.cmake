# Compiler warnings and sanitizers shared by every target of the project.

add_library(pp_warnings INTERFACE)
# A switch over one of the project's closed vocabularies (the modes above all) that misses a value
# does not compile, whatever PP_WARNINGS_AS_ERRORS says.
target_compile_options(pp_warnings INTERFACE -Wall -Wextra -Wshadow -Wswitch-enum -Werror=switch
                                             -Werror=switch-enum)
if(PP_WARNINGS_AS_ERRORS)
  target_compile_options(pp_warnings INTERFACE -Werror)
endif()

# Sanitizers apply to the targets that do not link LibTorch (LibTorch is not instrumented).
add_library(pp_sanitize INTERFACE)
if(PP_SANITIZE)
  target_compile_options(pp_sanitize INTERFACE -fsanitize=${PP_SANITIZE} -fno-omit-frame-pointer
                                               -fno-sanitize-recover=all)
  target_link_options(pp_sanitize INTERFACE -fsanitize=${PP_SANITIZE})
endif()
