# embed_text.cmake - writes a C file holding one text file as a
# NUL-terminated array, so the binary carries a report's style and script.
# Usage: cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed_text.cmake
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
get_filename_component(from "${IN}" NAME)
file(WRITE "${OUT}.tmp" "/* Generated from ${from} by cmake/embed_text.cmake: do not edit. */\nconst char ${NAME}[] = {${hex}0x00};\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
