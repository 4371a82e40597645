# cmake/gpu: the Vulkan layer bee_gpu (src/gpu), built when the Vulkan loader/headers and glslc are found.
# Shaders (src/gpu/shaders/*.comp) are compiled to SPIR-V by glslc at build time and embedded in the
# library as byte arrays (cmake/embed_spirv.cmake); nothing is loaded from disk at run time.
find_package(Vulkan QUIET)
find_program(GLSLC_EXECUTABLE glslc)
set(BEE_VULKAN AUTO CACHE STRING "build the Vulkan GPU layer (src/gpu): AUTO (when found), ON or OFF")
string(TOUPPER "${BEE_VULKAN}" bee_vulkan_mode)
if(bee_vulkan_mode MATCHES "^(ON|TRUE|YES|1)$")
  set(bee_vulkan_mode ON)
elseif(bee_vulkan_mode MATCHES "^(OFF|FALSE|NO|0)$")
  set(bee_vulkan_mode OFF)
endif()
set(bee_vulkan_found OFF)
if(Vulkan_FOUND AND GLSLC_EXECUTABLE)
  set(bee_vulkan_found ON)
endif()

if(bee_vulkan_mode STREQUAL "ON" AND NOT bee_vulkan_found)
  message(FATAL_ERROR "BEE_VULKAN=ON needs the Vulkan loader and headers (libvulkan-dev) and glslc "
                      "(Debian: apt-get install libvulkan-dev glslc; `make setup` does it)")
endif()
if(bee_vulkan_mode STREQUAL "OFF" OR NOT bee_vulkan_found)
  if(NOT Vulkan_FOUND)
    set(why "no Vulkan loader/headers")
  elseif(NOT GLSLC_EXECUTABLE)
    set(why "no glslc")
  else()
    set(why "BEE_VULKAN=OFF")
  endif()
  message(STATUS "bee: GPU layer off (${why}); install libvulkan-dev and glslc (`make setup`) for src/gpu, "
                 "test_gpu and `bee --list-devices`")
  return()
endif()
message(STATUS "bee: GPU layer on (Vulkan ${Vulkan_VERSION}, ${GLSLC_EXECUTABLE})")

set(shader_dir ${PROJECT_SOURCE_DIR}/src/gpu/shaders)
file(GLOB shader_srcs CONFIGURE_DEPENDS ${shader_dir}/*.comp)
file(GLOB shader_incs CONFIGURE_DEPENDS ${shader_dir}/*.glsl)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/shaders)
set(spvs "")
foreach(src ${shader_srcs})
  get_filename_component(name ${src} NAME_WE)
  set(spv ${CMAKE_BINARY_DIR}/shaders/${name}.spv)
  add_custom_command(OUTPUT ${spv}
    COMMAND ${GLSLC_EXECUTABLE} --target-env=vulkan1.0 -O -I ${shader_dir} -o ${spv} ${src}
    DEPENDS ${src} ${shader_incs}
    COMMENT "glslc ${name}.comp" VERBATIM)
  list(APPEND spvs ${spv})
  if(name MATCHES "^matmul_")  # a second build with subgroup reductions (SPIR-V 1.3), used where supported
    set(spv_sg ${CMAKE_BINARY_DIR}/shaders/${name}_sg.spv)
    add_custom_command(OUTPUT ${spv_sg}
      COMMAND ${GLSLC_EXECUTABLE} --target-env=vulkan1.1 -O -DBEE_SUBGROUP=1 -I ${shader_dir} -o ${spv_sg} ${src}
      DEPENDS ${src} ${shader_incs}
      COMMENT "glslc ${name}.comp (subgroups)" VERBATIM)
    list(APPEND spvs ${spv_sg})
  endif()
endforeach()
set(shaders_cpp ${CMAKE_BINARY_DIR}/shaders/shaders_spv.cpp)
add_custom_command(OUTPUT ${shaders_cpp}
  COMMAND ${CMAKE_COMMAND} -DOUT=${shaders_cpp} "-DSPVS=${spvs}" -P ${PROJECT_SOURCE_DIR}/cmake/embed_spirv.cmake
  DEPENDS ${spvs} ${PROJECT_SOURCE_DIR}/cmake/embed_spirv.cmake
  COMMENT "embedding SPIR-V" VERBATIM)

file(GLOB gpu_srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/gpu/*.cpp)
add_library(bee_gpu STATIC ${gpu_srcs} ${shaders_cpp})
target_include_directories(bee_gpu PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(bee_gpu PUBLIC bee_base bee_quant Vulkan::Vulkan)

# tools/gpu_bench: matvec GB/s per weight type, or attention per KV type (--kv), on one device (not built by default:
# `cmake --build build --target gpu_bench`). Static libstdc++, so a copy runs on another Linux machine
# that has only glibc and libvulkan.so.1.
add_executable(gpu_bench EXCLUDE_FROM_ALL ${PROJECT_SOURCE_DIR}/tools/gpu_bench.cpp)
target_link_libraries(gpu_bench PRIVATE bee_gpu bee_kv)
target_link_options(gpu_bench PRIVATE -static-libstdc++ -static-libgcc)
