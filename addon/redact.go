package addon

import (
	"strings"
)

// redacted replaces a credential in text that DefaultRedact cleans.
const redacted = "[REDACTED]"

// credentialKeys are the names whose values DefaultRedact removes, lower case.
var credentialKeys = [...]string{"password", "passwd", "pwd", "secret", "token", "apikey", "api_key", "api-key", "access_key", "accesskey", "private_key", "credential", "authorization", "bearer"}

// DefaultRedact replaces with "[REDACTED]" the values that look like
// credentials in driver error text before it reaches status, conditions or
// events: the value after a credential-looking key ("password=…", "token:
// …", "Authorization: Bearer …", "secret \"…\""), and the user information
// of a URL ("https://user:pass@host" → "https://[REDACTED]@host"). It is the
// default of Config.Redact and Input.Redact.
func DefaultRedact(s string) string {
	if !mayHoldCredential(s) {
		return s
	}
	s = redactUserinfo(s)
	lower := strings.ToLower(s)
	var b strings.Builder
	last := 0
	for i := 0; i < len(lower); {
		key := keyAt(lower, i)
		if key == 0 {
			i++
			continue
		}
		j := i + key
		// Skip the rest of a longer word ("tokens", "passwordFile"), then the
		// separator: spaces, '=', ':', quotes, and a "Bearer"/"Basic" scheme.
		for j < len(lower) && isWordByte(lower[j]) {
			j++
		}
		k, assigned := j, false
		for k < len(lower) && strings.IndexByte(" \t=:\"'", lower[k]) >= 0 {
			assigned = assigned || lower[k] != ' ' && lower[k] != '\t'
			k++
		}
		if !assigned {
			i = j
			continue
		}
		for _, scheme := range [...]string{"bearer ", "basic "} {
			if strings.HasPrefix(lower[k:], scheme) {
				k += len(scheme)
			}
		}
		end := k
		for end < len(lower) && !isValueEnd(lower[end]) {
			end++
		}
		if end == k {
			i = k
			continue
		}
		b.WriteString(s[last:k])
		b.WriteString(redacted)
		last, i = end, end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// mayHoldCredential is a cheap first look: most error text has no key and
// no URL user information.
func mayHoldCredential(s string) bool {
	if strings.IndexByte(s, '@') >= 0 {
		return true
	}
	for i := 0; i < len(s); i++ {
		if keyAt(s, i) > 0 {
			return true
		}
	}
	return false
}

// keyAt returns the length of the credential key starting at s[i] (at a
// word start, in any case), or 0.
func keyAt(s string, i int) int {
	switch s[i] | 0x20 {
	case 'p', 's', 't', 'a', 'c', 'b':
	default:
		return 0
	}
	if i > 0 && isWordByte(s[i-1]) && s[i-1] != '_' && s[i-1] != '-' {
		return 0
	}
	for _, k := range credentialKeys {
		if len(s)-i >= len(k) && strings.EqualFold(s[i:i+len(k)], k) {
			return len(k)
		}
	}
	return 0
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c >= 'A' && c <= 'Z'
}

func isValueEnd(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == ',' || c == ';' || c == '&' || c == '"' || c == '\'' || c == ')' || c == '}' || c == ']'
}

// redactUserinfo replaces "scheme://user:pass@" with "scheme://[REDACTED]@".
func redactUserinfo(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i+3 <= len(s); i++ {
		if s[i:i+3] != "://" {
			continue
		}
		start := i + 3
		end := start
		for end < len(s) && !isValueEnd(s[end]) && s[end] != '/' && s[end] != '@' {
			end++
		}
		if end < len(s) && s[end] == '@' && end > start {
			b.WriteString(s[last:start])
			b.WriteString(redacted)
			last = end
		}
		i = end - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}
