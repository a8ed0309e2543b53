# bash completion for fusebox(1), the fuseboxd console and CLI.
# Route and backend names are asked of the daemon (fusebox --json status,
# two seconds at most) with the --url / --token-file already typed.
# shellcheck shell=bash

_fusebox_names() { # routes|backends, then the global options to pass on
	local which=$1 json
	shift
	json=$(timeout 2 fusebox "$@" --json status 2>/dev/null) || return 0
	case $which in
	routes) json=${json%%\"backends\"*} ;;
	backends)
		[[ $json == *\"backends\"* ]] || return 0
		json=${json#*\"backends\"}
		;;
	esac
	grep -o '"name": *"[^"]*"' <<<"$json" | sed 's/.*"\([^"]*\)"$/\1/'
}

_fusebox() {
	local cur prev words cword
	if declare -F _init_completion >/dev/null; then
		_init_completion || return
	else
		COMPREPLY=()
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	fi

	local verbs="status routes breakers reviews slo alerts events level weights breaker review call report reload diagnose"
	local globals="--url --token-file --addr-file --fleet --host --json --help --version"
	local -a pass=()
	local i verb='' vi=0

	# Global options before the verb; find the verb.
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		--url | --token-file | --addr-file | --fleet | --host)
			pass+=("${words[i]}" "${words[i + 1]:-}")
			((i++))
			;;
		--url=* | --token-file=* | --addr-file=* | --fleet=* | --host=*) pass+=("${words[i]}") ;;
		--json) ;;
		-*) ;;
		*)
			verb=${words[i]}
			vi=$i
			break
			;;
		esac
	done

	if [[ -z $verb ]]; then
		case $prev in
		--token-file | --addr-file | --fleet)
			_fusebox_files
			return
			;;
		--url)
			_fusebox_reply -W "http://127.0.0.1:7700" -- "$cur"
			return
			;;
		esac
		if [[ $cur == -* ]]; then
			_fusebox_reply -W "$globals" -- "$cur"
		else
			_fusebox_reply -W "$verbs" -- "$cur"
		fi
		return
	fi

	# Position among the verb's positional arguments (options skipped).
	local n=0 j
	for ((j = vi + 1; j < cword; j++)); do
		case ${words[j]} in
		--reason | --ttl | --state | --route | --limit | --after | --note | --budget | --db | --since)
			((j++))
			;;
		-*) ;;
		*) ((n++)) ;;
		esac
	done

	case $prev in
	--state)
		_fusebox_reply -W "open pending claimed approved corrected rejected" -- "$cur"
		return
		;;
	--route)
		_fusebox_reply -W "$(_fusebox_names routes "${pass[@]}")" -- "$cur"
		return
		;;
	--db)
		_fusebox_files
		return
		;;
	--since)
		_fusebox_reply -W "1h 6h 24h 7d" -- "$cur"
		return
		;;
	--reason | --ttl | --limit | --after | --note | --budget)
		return
		;;
	esac

	local opts=
	case $verb in
	reviews) opts="--state --route --limit" ;;
	events) opts="--after --limit --follow" ;;
	level) opts="--reason --ttl" ;;
	breaker) opts="--reason" ;;
	review) opts="--note" ;;
	call) opts="--budget -v --verbose" ;;
	slo) opts="--prometheus" ;;
	report) opts="--db --since" ;;
	esac
	if [[ $cur == -* ]]; then
		_fusebox_reply -W "$opts" -- "$cur"
		return
	fi

	case $verb:$n in
	slo:0 | level:0 | weights:0 | call:0)
		_fusebox_reply -W "$(_fusebox_names routes "${pass[@]}")" -- "$cur"
		;;
	level:1)
		_fusebox_reply -W "0 1 2 3 auto" -- "$cur"
		;;
	weights:*)
		local -a bs
		mapfile -t bs < <(_fusebox_names backends "${pass[@]}")
		_fusebox_reply -S = -W "${bs[*]}" -- "$cur"
		compopt -o nospace 2>/dev/null
		;;
	breaker:0)
		_fusebox_reply -W "$(_fusebox_names backends "${pass[@]}")" -- "$cur"
		;;
	breaker:1)
		_fusebox_reply -W "open closed auto" -- "$cur"
		;;
	review:1)
		_fusebox_reply -W "approve correct reject" -- "$cur"
		;;
	esac
}

_fusebox_reply() { # compgen arguments
	mapfile -t COMPREPLY < <(compgen "$@")
}

_fusebox_files() {
	if declare -F _filedir >/dev/null; then
		_filedir
	else
		_fusebox_reply -f -- "$cur"
	fi
}

complete -F _fusebox fusebox
