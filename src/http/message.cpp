#include "http/message.h"

#include <strings.h>

#include <algorithm>

namespace qmlx::http {

bool CaseInsensitiveLess::operator()(const std::string& a, const std::string& b) const {
  return strcasecmp(a.c_str(), b.c_str()) < 0;
}

bool Request::has_header(std::string_view name) const {
  return headers.find(std::string(name)) != headers.end();
}

std::string Request::get_header_value(std::string_view name) const {
  auto it = headers.find(std::string(name));
  return it == headers.end() ? std::string() : it->second;
}

void Response::set_header(std::string_view name, std::string_view value) {
  headers.erase(std::string(name));
  headers.emplace(std::string(name), std::string(value));
}

bool Response::has_header(std::string_view name) const {
  return headers.find(std::string(name)) != headers.end();
}

std::string Response::get_header_value(std::string_view name) const {
  auto it = headers.find(std::string(name));
  return it == headers.end() ? std::string() : it->second;
}

void Response::set_content(std::string content, std::string_view content_type) {
  body = std::move(content);
  set_header("Content-Type", content_type);
}

void Response::set_chunked_content_provider(std::string_view content_type, ContentProvider provider,
                                            ContentProviderReleaser releaser) {
  set_header("Content-Type", content_type);
  content_provider = std::move(provider);
  content_provider_releaser = std::move(releaser);
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    case 507:
      return "Insufficient Storage";
    default:
      return "Unknown";
  }
}

}  // namespace qmlx::http
