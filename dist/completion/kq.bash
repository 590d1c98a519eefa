# bash completion for kq: its commands, options and their values, and kernel names for
# `kq info`, `kq list` and a query's probe (through `kq list`, which reads BTF and needs no
# root). Installed as share/bash-completion/completions/kq; or `source` this file.

_kq_names() {
  # Names matching the word being typed: functions, or tracepoint:/syscall: ones.
  local word=$1
  [[ ${#word} -lt 2 ]] && return
  kq list "${word}*" 2>/dev/null | awk 'NF { print $1 }' | head -n 200
}

_kq_complete() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion -n : || return
  else
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi

  local commands="check build run info list serve record replay"
  local options="-e --expr -f --format -o --output --prefix --packet-view --structs --stack-offsets -p --pid -c --command -d --duration
                 -v --verbose --attach --dump --buffer-size --btf --color --repl --packet-bytes --version -h --help"

  case $prev in
    -f | --format) COMPREPLY=($(compgen -W "text json pcapng folded perfetto" -- "$cur")); return ;;
    --attach) COMPREPLY=($(compgen -W "fentry kprobe kprobe.multi tracepoint" -- "$cur")); return ;;
    --dump) COMPREPLY=($(compgen -W "ast types plan ir bpf verifier" -- "$cur")); return ;;
    --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
    --packet-view) COMPREPLY=($(compgen -W "live end both" -- "$cur")); return ;;
    --structs) COMPREPLY=($(compgen -W "compact full" -- "$cur")); return ;;
    --prefix)
      local chosen=${cur%,*} last=${cur##*,}
      if [[ $cur == *,* ]]; then
        COMPREPLY=($(compgen -P "$chosen," -W "time cpu pid tid comm query probe" -- "$last"))
      else
        COMPREPLY=($(compgen -W "none time cpu pid tid comm query probe" -- "$cur"))
      fi
      compopt -o nospace 2>/dev/null
      return ;;
    -p | --pid) COMPREPLY=($(compgen -W "$(ls /proc 2>/dev/null | grep -E '^[0-9]+$')" -- "$cur")); return ;;
    -o | --output | --btf) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    -c | --command | -d | --duration | --buffer-size | --buffer | -e | --expr | --max-size | --packet-bytes) return ;;
  esac

  # The command, if one was given before the word being completed.
  local command="" i
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      check | build | run | info | list | serve | record | replay) command=${words[i]}; break ;;
    esac
  done

  case $command in
    info | list)
      [[ $cur == -* ]] && { COMPREPLY=($(compgen -W "-h --help --btf" -- "$cur")); return; }
      COMPREPLY=($(compgen -W "$(_kq_names "$cur") $([[ $command == list ]] && echo packet)" -- "$cur"))
      return ;;
    run)
      [[ $cur == -* ]] && { COMPREPLY=($(compgen -W "$options" -- "$cur")); return; }
      COMPREPLY=($(compgen -f -X '!*.o' -- "$cur") $(compgen -d -- "$cur"))
      return ;;
    serve)
      COMPREPLY=($(compgen -W "--listen --check --events --events-max-bytes --remote-write
                                 --remote-write-interval --instance -h --help" -- "$cur"))
      [[ $cur != -* ]] && COMPREPLY+=($(compgen -d -- "$cur") $(compgen -f -X '!*.@(kq|o)' -- "$cur"))
      return ;;
    record)
      [[ $cur == -* ]] && { COMPREPLY=($(compgen -W "-o --output -q --quiet --max-size $options" -- "$cur")); return; }
      COMPREPLY=($(compgen -f -X '!*.kq' -- "$cur") $(compgen -d -- "$cur"))
      return ;;
    replay)
      [[ $cur == -* ]] && { COMPREPLY=($(compgen -W "--info -f --format -o --output --prefix --structs --packet-view
                                                     --stack-offsets -h --help" -- "$cur")); return; }
      COMPREPLY=($(compgen -f -- "$cur") $(compgen -d -- "$cur"))
      return ;;
    build)
      [[ $cur == -* ]] && { COMPREPLY=($(compgen -W "-e -o --output --ipft --btf -h --help" -- "$cur")); return; }
      COMPREPLY=($(compgen -f -X '!*.@(kq|c)' -- "$cur") $(compgen -d -- "$cur"))
      return ;;
  esac

  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
  elif [[ $cur == "trace "* || $cur == *" trace "* ]]; then
    # Inside a quoted query: the probe after `trace`.
    local head=${cur% *} probe=${cur##* }
    COMPREPLY=($(compgen -P "$head " -W "$(_kq_names "$probe")" -- "$probe"))
    compopt -o nospace 2>/dev/null
  else
    COMPREPLY=($(compgen -W "$commands" -- "$cur") $(compgen -f -X '!*.kq' -- "$cur") $(compgen -d -- "$cur"))
  fi
}

complete -F _kq_complete kq
