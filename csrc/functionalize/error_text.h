#pragma once

#include <c10/util/Exception.h>
#include <torch/csrc/Exceptions.h>

#include <exception>
#include <string>

namespace fxinplace::functionalize {

// The message of an error an op raised, for one of our own errors to quote. An op
// reached through a Python mode (make_fx) raises python_error, not c10::Error, so
// callers catch std::exception; its text then ends in a Python traceback
// ("\n\nAt:\n..."), which is noise in a message about the user's op. A python_error
// is taken off the Python error indicator first (persist): it is ours to report, not
// to leave pending, and only then has a message.
inline std::string error_text(std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  if (auto* from_python = dynamic_cast<python_error*>(&e)) from_python->persist();
  std::string message = e.what();
  return message.substr(0, message.find("\n\nAt:"));
}

}  // namespace fxinplace::functionalize
