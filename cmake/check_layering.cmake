# check_layering.cmake: kiln's layering check. Every `#include "kiln/<path>"` in the source tree
# must point the way the room table allows.
#
#   cmake -DTABLE=<markdown file> -DROOT=<dir holding kiln/> -P cmake/check_layering.cmake
#
# Exit status 0 when every include is allowed; non-zero (a FATAL_ERROR) on any wrong-way include,
# on a file that lies in no room, or on a malformed table. Each wrong-way include is printed as
#   <ROOT>/kiln/<file>:<line>: #include "kiln/<path>": room '<a>' may not include room '<b>'
#   ('<a>' may include: ...)
# A script (not a C++ or Python program) so that it runs wherever CMake does.
#
# The table
#   TABLE is a markdown file; the table is read from the lines between the marker lines
#   `<!-- layering:begin -->` and `<!-- layering:end -->` (the first such pair; anything else in
#   the file is ignored, and the markers may also enclose prose or several tables). Each table
#   row `| room | ... | may include |` names a room in its FIRST cell and the rooms it may
#   include in its LAST cell; the cells in between are free text. Header rows (a row directly
#   followed by a `|---|` separator row) and separator rows are skipped.
#     - A room is a folder path relative to ROOT/kiln: `cuda`, `cuda/compiler`. Backticks and a
#       trailing `/` are ignored (`cuda/` is `cuda`). Names are lower case [a-z0-9_] joined by `/`.
#     - The last cell is a comma-separated list of rooms. Text in parentheses is a comment and is
#       dropped first, so `(nothing)` is an empty list, as are an empty cell, `none`, `-` and `—`.
#       Every listed room must have a row of its own (a typo is an error, not a silent pass).
#     - A room may have one row only; the rooms' "may include" graph must have no cycle (a
#       cycle in the table is reported as an error, so the allowed graph is always a DAG).
#
# The rules
#   1. The room of a file (or of an include's path "kiln/<p>") is the LONGEST room R such that
#      the path lies inside folder R (ROOT/kiln/R/...). So with rows `cuda` and `cuda/compiler`,
#      cuda/compiler/x.h is in room cuda/compiler, cuda/x.h and cuda/foo/x.h (no `cuda/foo` row)
#      are in room cuda. A subfolder WITHOUT a row of its own is part of its parent's room.
#   2. An include from room A of a header in room B is allowed when B == A or B is listed in A's
#      last cell. Nothing else is allowed. In particular:
#        - a room always includes itself, i.e. its own files and the files of its subfolders
#          that have no row of their own (runtime/host, runtime/cts when they have no rows);
#        - a subfolder WITH a row is a room of its own: its parent may include it only if the
#          parent's row lists it, and the subfolder may include its parent only if its own row
#          lists the parent (`cuda/compiler` lists `cuda`, `cuda` does not list `cuda/compiler`);
#        - listing room `cuda` allows exactly the files of room `cuda` (files directly in cuda/
#          and in subfolders of cuda/ without a row), not cuda/compiler, cuda/libs, ... (each of
#          those must be listed by name).
#   3. Every .h and .cc file under ROOT/kiln must lie in some room (a new top-level folder needs a
#      row). An include of a path that lies in no room is an error too.
#   4. No exemptions: test files (_test.cc), test utilities and benchmarks follow the same rules.
#   Only quoted includes that begin a line (`#include "kiln/..."`, spaces allowed around `#`)
#   are read; commented-out includes (`// #include ...`) are not.

cmake_minimum_required(VERSION 3.16)

if(NOT DEFINED TABLE OR NOT DEFINED ROOT)
  message(FATAL_ERROR "usage: cmake -DTABLE=<markdown file> -DROOT=<dir containing kiln/> "
                      "-P check_layering.cmake")
endif()
get_filename_component(TABLE "${TABLE}" ABSOLUTE)
get_filename_component(ROOT "${ROOT}" ABSOLUTE)
if(NOT EXISTS "${TABLE}")
  message(FATAL_ERROR "layering: table file '${TABLE}' does not exist")
endif()
if(NOT IS_DIRECTORY "${ROOT}/kiln")
  message(FATAL_ERROR "layering: '${ROOT}/kiln' is not a directory")
endif()

# ---- the table -------------------------------------------------------------------------------

file(READ "${TABLE}" md)
set(begin_marker "<!-- layering:begin -->")
set(end_marker "<!-- layering:end -->")
string(FIND "${md}" "${begin_marker}" b)
if(b EQUAL -1)
  message(FATAL_ERROR "layering: ${TABLE} has no '${begin_marker}' line")
endif()
string(LENGTH "${begin_marker}" bl)
math(EXPR b "${b} + ${bl}")
string(SUBSTRING "${md}" ${b} -1 md)
string(FIND "${md}" "${end_marker}" e)
if(e EQUAL -1)
  message(FATAL_ERROR "layering: ${TABLE} has no '${end_marker}' line after the begin marker")
endif()
string(SUBSTRING "${md}" 0 ${e} md)

# One list element per line: neutralise the characters that are special in CMake lists.
string(REPLACE "\\" "/" md "${md}")
string(REPLACE ";" "," md "${md}")
string(REPLACE "[" "(" md "${md}")
string(REPLACE "]" ")" md "${md}")
string(REPLACE "\r" "" md "${md}")
string(REPLACE "\n" ";" lines "${md}")

# The table lines (starting with `|`), and which of them are separators.
set(rows "")
foreach(line IN LISTS lines)
  string(STRIP "${line}" line)
  if(line MATCHES "^\\|")
    list(APPEND rows "${line}")
  endif()
endforeach()

set(rooms "")
list(LENGTH rows nrows)
set(i 0)
while(i LESS nrows)
  list(GET rows ${i} row)
  math(EXPR next "${i} + 1")
  set(is_header FALSE)
  if(next LESS nrows)
    list(GET rows ${next} nrow)
    if(nrow MATCHES "^[|: \t-]+$")
      set(is_header TRUE)
    endif()
  endif()
  set(i ${next})
  if(is_header OR row MATCHES "^[|: \t-]+$")
    continue()
  endif()
  # Cells: drop the outer pipes, split on the inner ones.
  string(REGEX REPLACE "^\\|" "" cells "${row}")
  string(REGEX REPLACE "\\|[ \t]*$" "" cells "${cells}")
  string(REPLACE "|" ";" cells "${cells}")
  list(GET cells 0 room)
  list(GET cells -1 uses)
  string(REGEX REPLACE "[`* \t]" "" room "${room}")
  string(REGEX REPLACE "/+$" "" room "${room}")
  if(NOT room MATCHES "^[a-z0-9_]+(/[a-z0-9_]+)*$")
    message(FATAL_ERROR "layering: ${TABLE}: row '${row}': '${room}' is not a room "
                        "(a folder under kiln/, like cuda/compiler)")
  endif()
  if(room IN_LIST rooms)
    message(FATAL_ERROR "layering: ${TABLE}: room '${room}' has more than one row")
  endif()
  list(APPEND rooms "${room}")
  # The may-include list: comments in parentheses dropped, then comma-separated names.
  string(REGEX REPLACE "\\([^)]*\\)" "" uses "${uses}")
  string(REGEX REPLACE "[`* \t]" "" uses "${uses}")
  string(REPLACE "," ";" uses "${uses}")
  set(list "")
  foreach(u IN LISTS uses)
    string(REGEX REPLACE "/+$" "" u "${u}")
    if(u STREQUAL "" OR u STREQUAL "none" OR u STREQUAL "-" OR u STREQUAL "—" OR
       u STREQUAL "nothing")
      continue()
    endif()
    if(NOT u MATCHES "^[a-z0-9_]+(/[a-z0-9_]+)*$")
      message(FATAL_ERROR "layering: ${TABLE}: row '${room}': '${u}' is not a room name")
    endif()
    list(APPEND list "${u}")
  endforeach()
  set("may_${room}" "${list}")
endwhile()

if(NOT rooms)
  message(FATAL_ERROR "layering: ${TABLE}: no table rows between the markers")
endif()

# Every listed room has a row; then the graph has no cycle (Kahn: peel rooms whose listed rooms
# are all peeled; whatever cannot be peeled lies on or above a cycle).
foreach(r IN LISTS rooms)
  foreach(u IN LISTS "may_${r}")
    if(NOT u IN_LIST rooms)
      message(FATAL_ERROR "layering: ${TABLE}: room '${r}' lists '${u}', which has no row")
    endif()
  endforeach()
endforeach()
set(left ${rooms})
set(progress TRUE)
while(left AND progress)
  set(progress FALSE)
  set(still "")
  foreach(r IN LISTS left)
    set(ready TRUE)
    foreach(u IN LISTS "may_${r}")
      if(NOT u STREQUAL r AND u IN_LIST left)
        set(ready FALSE)
        break()
      endif()
    endforeach()
    if(ready)
      set(progress TRUE)
    else()
      list(APPEND still "${r}")
    endif()
  endforeach()
  set(left ${still})
endwhile()
if(left)
  list(JOIN left ", " left_text)
  message(FATAL_ERROR "layering: ${TABLE}: the may-include lists have a cycle through some of: "
                      "${left_text}")
endif()

# The rooms, longest first, so the first folder match is the longest.
set(by_length "")
foreach(r IN LISTS rooms)
  string(LENGTH "${r}" n)
  math(EXPR key "1000 - ${n}")
  list(APPEND by_length "${key}:${r}")
endforeach()
list(SORT by_length)
set(sorted_rooms "")
foreach(k IN LISTS by_length)
  string(REGEX REPLACE "^[0-9]+:" "" r "${k}")
  list(APPEND sorted_rooms "${r}")
endforeach()

# room_of(<folder relative to kiln/> <out var>), memoised per folder.
function(room_of dir out)
  if(DEFINED "room_dir_${dir}")
    set(${out} "${room_dir_${dir}}" PARENT_SCOPE)
    return()
  endif()
  set(found "")
  foreach(r IN LISTS sorted_rooms)
    if(dir STREQUAL r)
      set(found "${r}")
      break()
    endif()
    string(LENGTH "${r}/" n)
    string(SUBSTRING "${dir}/" 0 ${n} head)
    if(head STREQUAL "${r}/")
      set(found "${r}")
      break()
    endif()
  endforeach()
  set("room_dir_${dir}" "${found}" PARENT_SCOPE)
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# line_of(<file> <line text> <out var>): the 1-based number of the first line equal to it.
function(line_of path text out)
  file(READ "${path}" content)
  string(FIND "\n${content}" "\n${text}" pos)
  set(${out} "?" PARENT_SCOPE)
  if(pos EQUAL -1)
    return()
  endif()
  string(SUBSTRING "${content}" 0 ${pos} before)
  string(REGEX REPLACE "[^\n]" "" newlines "${before}")
  string(LENGTH "${newlines}" n)
  math(EXPR n "${n} + 1")
  set(${out} "${n}" PARENT_SCOPE)
endfunction()

# ---- the tree --------------------------------------------------------------------------------

file(GLOB_RECURSE files RELATIVE "${ROOT}/kiln" "${ROOT}/kiln/*.h" "${ROOT}/kiln/*.cc")
list(SORT files)
set(errors 0)
set(nincludes 0)
set(seen_rooms "")
foreach(f IN LISTS files)
  get_filename_component(fdir "${f}" DIRECTORY)
  room_of("${fdir}" from)
  if(from STREQUAL "")
    message("${ROOT}/kiln/${f}: lies in no room of ${TABLE} (add a row for its folder)")
    math(EXPR errors "${errors} + 1")
    continue()
  endif()
  if(NOT from IN_LIST seen_rooms)
    list(APPEND seen_rooms "${from}")
  endif()
  file(STRINGS "${ROOT}/kiln/${f}" incs REGEX "^[ \t]*#[ \t]*include[ \t]*\"kiln/")
  foreach(inc IN LISTS incs)
    math(EXPR nincludes "${nincludes} + 1")
    if(NOT inc MATCHES "\"kiln/([^\"]*)\"")
      continue()
    endif()
    set(target "${CMAKE_MATCH_1}")
    get_filename_component(tdir "${target}" DIRECTORY)
    room_of("${tdir}" to)
    if(to STREQUAL from)
      continue()
    endif()
    if(to STREQUAL "")
      set(why "kiln/${target} lies in no room of the table")
    elseif(to IN_LIST "may_${from}")
      continue()
    else()
      set(allowed "${may_${from}}")
      if(allowed STREQUAL "")
        set(allowed "(nothing)")
      else()
        list(JOIN allowed ", " allowed)
      endif()
      set(why "room '${from}' may not include room '${to}' ('${from}' may include: ${allowed})")
    endif()
    string(STRIP "${inc}" inc_text)
    line_of("${ROOT}/kiln/${f}" "${inc}" line)
    message("${ROOT}/kiln/${f}:${line}: ${inc_text}: ${why}")
    math(EXPR errors "${errors} + 1")
  endforeach()
endforeach()

list(LENGTH files nfiles)
list(LENGTH rooms nrooms)
if(errors GREATER 0)
  message(FATAL_ERROR "layering: ${errors} wrong-way include(s) or unplaced file(s) in ${nfiles} "
                      "files under ${ROOT}/kiln (table: ${TABLE})")
endif()
message("layering: OK, ${nfiles} files, ${nincludes} kiln includes, ${nrooms} rooms (${TABLE})")
