// Package cli gives the examples one command-line behaviour: -h prints the
// usage on stderr and exits 0; a mistake the program can name (a bad value,
// a flag that needs another, an argument) is one line "command: -flag:
// what is wrong" on stderr and exit status 2; an unknown flag is its error
// and the usage on stderr and exit status 2; a run that fails is one line
// and exit status 1.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// UsageError is a command line that cannot run (exit status 2). Line says
// what is wrong, naming its flag; it is empty when the error and the usage
// are on stderr already.
type UsageError struct {
	// Line is the one line printed after the command's name.
	Line string
}

// Error returns Line.
func (e *UsageError) Error() string { return e.Line }

// Errorf returns the *UsageError "-name: <message>" of the flag name.
func Errorf(name, format string, args ...any) error {
	return &UsageError{Line: "-" + name + ": " + fmt.Sprintf(format, args...)}
}

// Parse parses args with fs. For -h it prints the usage on stderr and
// returns flag.ErrHelp; for an unknown flag it prints the flag package's
// error and the usage on stderr and returns an empty *UsageError; a value
// that does not parse, a flag without its value and an argument are a
// *UsageError naming what is wrong.
func Parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	usage := func() {
		fs.SetOutput(stderr)
		fmt.Fprintf(stderr, "Usage of %s:\n", fs.Name())
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	case err != nil && strings.HasPrefix(err.Error(), "flag provided but not defined"):
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		usage()
		return &UsageError{}
	case err != nil:
		return &UsageError{Line: flagError(err.Error())}
	case fs.NArg() > 0:
		return &UsageError{Line: fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// flagError rewrites the flag package's `invalid value "x" for flag -f:
// why` (`... for -f: why` for a bool) as `-f: invalid value "x": why`, and
// "flag needs an argument: -f" as "-f: needs a value".
func flagError(msg string) string {
	for _, sep := range []string{" for flag -", " for -"} {
		if before, after, ok := strings.Cut(msg, sep); ok {
			name, why, _ := strings.Cut(after, ": ")
			return fmt.Sprintf("-%s: %s: %s", name, before, why)
		}
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return name + ": needs a value"
	}
	return msg
}

// Requires returns the *UsageError "-dependent: needs -required" for the
// first of dependents set on fs's command line when required is not set
// there, and nil otherwise.
func Requires(fs *flag.FlagSet, required string, dependents ...string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set[required] {
		return nil
	}
	for _, d := range dependents {
		if set[d] {
			return Errorf(d, "needs -%s", required)
		}
	}
	return nil
}

// Exit prints err on stderr as one line after the command's name and
// returns the exit status: 0 for nil and flag.ErrHelp, 2 for a
// *UsageError, 1 for any other error.
func Exit(stderr io.Writer, command string, err error) int {
	var usage *UsageError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		if usage.Line != "" {
			fmt.Fprintf(stderr, "%s: %s\n", command, usage.Line)
		}
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %v\n", command, err)
		return 1
	}
}

// Main runs run on the process's arguments and streams, with a context
// that ends on SIGINT or SIGTERM, and exits with the status run returns.
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
